import { describe, expect, it } from 'vitest';
import { bodyDigest } from './body-digest.js';

describe('bodyDigest', () => {
  it('digests bytes as bytes, text as UTF-8, parsed bodies as their JSON; no body is undefined', () => {
    const bytes = Buffer.from('{"a":1}');
    expect(bodyDigest(bytes)).toBe(bodyDigest('{"a":1}'));
    expect(bodyDigest(new Uint8Array(bytes))).toBe(bodyDigest(bytes));
    expect(bodyDigest(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))).toBe(
      bodyDigest(bytes),
    );
    expect(bodyDigest({ a: 1 })).toBe(bodyDigest('{"a":1}'));
    expect(bodyDigest({ a: 2 })).not.toBe(bodyDigest({ a: 1 }));
    expect(bodyDigest(undefined)).toBeUndefined();
    expect(bodyDigest(null)).toBeUndefined();
    // A body far over the idempotency payload bound is just hashed.
    expect(bodyDigest('x'.repeat(4 * 1024 * 1024))).toMatch(/^[\w-]{43}$/);
  });
});
