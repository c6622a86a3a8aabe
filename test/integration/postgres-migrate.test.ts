import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, migrate, SCHEMA_VERSION } from '../../src/postgres/index.js';
import { dropSchema, runSchema, testPool, untouchablePool } from './pg-env.js';

describe('Postgres migrations', () => {
  const pool = testPool(8);
  const schemas: string[] = [];
  const schema = (name: string) => {
    const s = runSchema(name);
    schemas.push(s);
    return s;
  };
  afterAll(async () => {
    for (const s of schemas) await dropSchema(pool, s);
    await pool.end();
  });

  it('creates the schema once; a second run applies nothing', async () => {
    const s = schema('mig');
    const first = await migrate({ pool, schema: s });
    expect(first.applied.map((m) => m.version)).toEqual(
      Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1),
    );
    expect((await migrate({ pool, schema: s })).applied).toEqual([]);
    const rows = await pool.query(`SELECT version FROM "${s}".migrations ORDER BY version`);
    expect(rows.rows.map((r) => r.version)).toEqual(first.applied.map((m) => m.version));
  });

  it('eight processes migrating at once take turns: each version is applied exactly once', async () => {
    const s = schema('mig_race');
    const results = await Promise.all(Array.from({ length: 8 }, () => migrate({ pool, schema: s })));
    const applied = results.flatMap((r) => r.applied.map((m) => m.version));
    expect(applied.sort((a, b) => a - b)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
  });

  it('refuses a schema at a newer version than it knows, changing nothing', async () => {
    const s = schema('mig_newer');
    await migrate({ pool, schema: s });
    await pool.query(`INSERT INTO "${s}".migrations (version, name) VALUES ($1, 'future')`, [
      SCHEMA_VERSION + 1,
    ]);
    await expect(migrate({ pool, schema: s })).rejects.toMatchObject({
      code: 'ERR_STORE',
      outcome: 'not-applied',
      message: expect.stringContaining(`version ${SCHEMA_VERSION + 1}, newer than`),
    });
  });

  it('hostile or mistyped schema names are refused before any SQL', async () => {
    const { pool: spy, calls } = untouchablePool();
    for (const bad of [
      'x"; DROP SCHEMA public; --',
      'Upper',
      '1abc',
      '',
      'a'.repeat(64),
      'public',
      'pg_catalog',
      'a.b',
      7,
    ]) {
      expect(() => createPostgresStore({ pool: spy, schema: bad as string })).toThrow(/Expected `schema`/);
      await expect(migrate({ pool: spy, schema: bad as string })).rejects.toThrow(/Expected `schema`/);
    }
    expect(calls).toEqual([]);
  });

  it('a store with migrate: false does not create its schema; with the default it does on first use', async () => {
    const s = schema('mig_lazy');
    const off = createPostgresStore({ pool, schema: s, migrate: false });
    await off.versionGet('g', 'k').catch(() => undefined);
    const none = await pool.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [s]);
    expect(none.rowCount).toBe(0);
    const on = createPostgresStore({ pool, schema: s });
    await on.versionGet('g', 'k').catch(() => undefined);
    const made = await pool.query('SELECT 1 FROM information_schema.schemata WHERE schema_name = $1', [s]);
    expect(made.rowCount).toBe(1);
  });
});
