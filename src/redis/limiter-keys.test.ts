// The limiter's key strings are stored data: Redis keeps its counters under them and the
// PostgreSQL store its rows (limiter_state.key). A change of layout orphans every counter of a
// running deployment, so each form is pinned here, for every kind of namespace and subject.
import { describe, expect, it } from 'vitest';
import type { LimitSpec } from '../windows/limits/types.js';
import { limiterKey, namespaceTag } from './limiter-keys.js';

const spec = (id: string, algorithm: LimitSpec['algorithm'], limit: number, param = 0): LimitSpec => ({
  id,
  algorithm,
  limit,
  windowMs: 1000,
  param,
});

describe('limiter key layout (Redis keys, PostgreSQL rows)', () => {
  it('namespaces: a limiter or tenant namespace as it is, any other under |n:', () => {
    expect(namespaceTag('|l:api')).toBe('|l:api');
    expect(namespaceTag('|t:acme%20inc')).toBe('|t:acme%20inc');
    expect(namespaceTag('plain')).toBe('|n:plain');
    expect(namespaceTag('|n:x')).toBe('|n:%7Cn%3Ax');
    expect(namespaceTag('{a}*')).toBe('|n:%7Ba%7D%2A');
  });

  it('one subject in the hash tag; several subjects (by) tagged by the namespace alone', () => {
    expect(limiterKey('|l:api', { spec: spec('s', 'gcra', 5, 2), subject: 'u1' })).toMatchInlineSnapshot(
      `"{|l:api:u1}:s:g1000.2.5"`,
    );
    expect(
      limiterKey('|l:api', { spec: spec('ip', 'fixed-window', 5), subject: '10.0.0.1', by: 'ip' }),
    ).toMatchInlineSnapshot(`"{|l:api}:ip:10.0.0.1:ip:f1000"`);
    expect(
      limiterKey('|t:t1', { spec: spec('m', 'sliding-log', 50), subject: 'a:b{c}*' }),
    ).toMatchInlineSnapshot(`"{|t:t1:a%3Ab%7Bc%7D%2A}:m:d1000"`);
    expect(limiterKey('|t:t1', { spec: spec('m', 'sliding-log', 600), subject: 'é' })).toMatchInlineSnapshot(
      `"{|t:t1:%C3%A9}:m:z1000"`,
    );
    expect(
      limiterKey('|n:x', { spec: spec('w/s', 'sliding-window', 10, 100), subject: 'k', by: 'user' }),
    ).toMatchInlineSnapshot(`"{|n:x}:user:k:w%2Fs:w1000.100"`);
  });
});
