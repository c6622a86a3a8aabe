// The generated modules are current with their sources, and a released migration never changes:
// migrate() applies only the versions a database has not had, so an edited migration would leave
// every database that already ran it on a schema the code no longer describes. A change to the
// schema is a new NNN-name.sql file, and a new line below with its hash
// (`sha256sum src/postgres/sql/NNN-name.sql`).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without types
import { render as renderLua } from '../../scripts/gen-lua.mjs';
// @ts-expect-error: a plain .mjs build script without types
import { render as renderSql } from '../../scripts/gen-sql.mjs';
import { migrations } from '../../src/postgres/migrations.generated.js';

/** Each released migration (`NNN-name`) and the sha256 of its SQL text, as shipped. */
const RELEASED: Readonly<Record<string, string>> = {
  '001-ledger': 'e081a8bd9124eca9e7bc9703723b80366de974d5e5da13e0e284701775c09df7',
  '002-limiter': '19bde4946a61f6007b6fec4b36c80cdeb8c392d453929d255c50910fa136db64',
  '003-ordering': '7abba4d56daabeea275720f2c7456ae2bb529fb71ed1770858785a0645a56681',
  '004-idempotency': 'c65a3772de697b8bb56b0373f90191f9be04a4171c140d5632f3f23a0e889ecf',
  '005-limiter-adjust': '3e0dcb9c9dfd86bea1a7a1f011aed8e904f3187df71833ab3ecd7ff646264cc1',
};

const source = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('generated modules', () => {
  it('src/postgres/migrations.generated.ts is current with src/postgres/sql (node scripts/gen-sql.mjs)', () => {
    expect(source('src/postgres/migrations.generated.ts')).toBe((renderSql as () => string)());
  });

  it('src/redis/scripts.generated.ts is current with src/redis/lua (node scripts/gen-lua.mjs)', () => {
    expect(source('src/redis/scripts.generated.ts')).toBe((renderLua as () => string)());
  });
});

describe('released migrations', () => {
  const shipped = Object.fromEntries(
    migrations.map((m) => [`${String(m.version).padStart(3, '0')}-${m.name}`, sha256(m.sql)]),
  );

  it('each pinned migration is still shipped, with the text it was released with', () => {
    for (const [name, hash] of Object.entries(RELEASED))
      expect({ name, hash: shipped[name] }).toEqual({ name, hash });
  });

  it('each shipped migration is pinned (a new migration adds its line to RELEASED)', () => {
    expect(Object.keys(shipped)).toEqual(Object.keys(RELEASED));
  });
});
