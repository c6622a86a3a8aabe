import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isOnceflowError } from '../../src/core/errors.js';
import { defineSignature, type SignatureSchema } from '../../src/signature/define-signature.js';

interface Vector {
  name: string;
  schema: SignatureSchema;
  payload: Record<string, unknown>;
  readable: string;
  hashed: string;
}
interface Invalid {
  name: string;
  schema: SignatureSchema;
  payload: Record<string, unknown>;
  path: string;
}
interface VectorFile {
  about: string;
  version: string;
  vectors: Vector[];
  invalid: Invalid[];
}

const FILE = fileURLToPath(new URL('./signature-v1.json', import.meta.url));
const SCRIPT = fileURLToPath(new URL('../../scripts/gen-signature-vectors.mjs', import.meta.url));
const file = JSON.parse(readFileSync(FILE, 'utf8')) as VectorFile;

/** The tags documented in the file's `about`: `{"$bigint": "..."}` and `{"$number": "..."}`. */
function decodeTags(value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const tagged = value as { $bigint?: unknown; $number?: unknown };
    if (typeof tagged.$bigint === 'string') return BigInt(tagged.$bigint);
    if (typeof tagged.$number === 'string') return Number(tagged.$number);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decodeTags(v)]));
  }
  return value;
}

function payloadOf(v: { payload: Record<string, unknown> }): Record<string, unknown> {
  return decodeTags(v.payload) as Record<string, unknown>;
}

describe('signature test vectors (test/vectors/signature-v1.json)', () => {
  it('holds at least 25 vectors with unique names, and documents its encoding', () => {
    expect(file.version).toBe('v1');
    expect(file.vectors.length).toBeGreaterThanOrEqual(25);
    expect(new Set(file.vectors.map((v) => v.name)).size).toBe(file.vectors.length);
    expect(file.about).toContain('$bigint');
    expect(file.about).toContain('$number');
    expect(file.about).toContain('base64url');
  });

  it('covers every type and the edges', () => {
    const types = new Set(file.vectors.flatMap((v) => v.schema.map(([, type]) => type)));
    expect([...types].sort()).toEqual(['bool', 'decimal', 'int', 'string']);
    const raw = JSON.stringify(file.vectors.map((v) => v.payload));
    for (const needle of ['$bigint', '$number', '|', '%', '=', '🎲', '""', '-300', '"-0"']) {
      expect(raw, needle).toContain(needle);
    }
    const readables = file.vectors.map((v) => v.readable);
    expect(readables).toContain('v1|x=a%7Cb|y=c');
    expect(readables).toContain('v1|x=a|y=b%7Cc');
  });

  it.each(file.vectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    const payload = payloadOf(v);
    expect(defineSignature(v.schema)(payload)).toBe(v.readable);
    expect(defineSignature(v.schema, { hash: true })(payload)).toBe(v.hashed);
    expect(v.hashed).toBe(`v1h:${createHash('sha256').update(v.readable, 'utf8').digest('base64url')}`);
  });

  it('shares a signature only between vectors of equal values, in both forms', () => {
    // These groups write the same values in different ways; every other vector stands for its own.
    const sameValues = [
      [
        'settlement, the DESIGN example',
        'payload key order does not matter',
        'fields outside the schema are ignored',
      ],
      ['int: "-0" is 0', 'int: number -0 is 0'],
      ['decimal: "-0.00" is 0', 'decimal: number -0 is 0'],
      ['decimal: integer zeros are kept', 'decimal: "100.000" is 100'],
    ];
    const groups = new Map<string, string[]>();
    for (const v of file.vectors) groups.set(v.readable, [...(groups.get(v.readable) ?? []), v.name]);
    const shared = [...groups.values()].filter((names) => names.length > 1);
    expect(shared).toEqual(sameValues);
    const hashes = new Map<string, string>();
    for (const v of file.vectors) {
      expect(hashes.get(v.hashed) ?? v.readable).toBe(v.readable);
      hashes.set(v.hashed, v.readable);
    }
    expect(hashes.size).toBe(groups.size);
  });

  it.each(file.invalid.map((v) => [v.name, v] as const))('refuses: %s', (_name, v) => {
    for (const sign of [defineSignature(v.schema), defineSignature(v.schema, { hash: true })]) {
      let err: unknown;
      try {
        sign(payloadOf(v));
      } catch (e) {
        err = e;
      }
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect((err as { path: string }).path).toBe(v.path);
    }
  });

  it('is exactly what scripts/gen-signature-vectors.mjs writes', () => {
    expect(() => execFileSync(process.execPath, [SCRIPT, '--check'], { stdio: 'pipe' })).not.toThrow();
  });
});
