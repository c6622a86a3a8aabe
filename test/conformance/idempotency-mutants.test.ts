// Each mutant breaks the idempotency operations in one way a real store could get them wrong
// (a model store over wrapStore, on the wall clock as Redis is on its own); the idempotency suite
// must fail on each. The same model unbroken passes it, so a failure is the mutation's.
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/index.js';
import { conformance, wrapStore } from '../../src/testing/index.js';

type Mutation =
  | 'none'
  | 'no-fencing'
  | 'expired-lease-holds'
  | 'no-mismatch'
  | 'mismatch-only-when-completed'
  | 'dead-record-mismatches'
  | 'begin-not-atomic'
  | 'ttl-ignored'
  | 'release-deletes-completed'
  | 'renew-does-not-extend'
  | 'names-collide'
  | 'complete-keeps-old-value';

interface Rec {
  inProgress: boolean;
  token: string;
  hash: string;
  value: string;
  expiresAt: number;
}

const tick = () => new Promise((r) => setTimeout(r, 1));

function model(m: Mutation): Parameters<typeof wrapStore>[1] {
  const records = new Map<string, Rec>();
  const id = (name: string, key: string) => (m === 'names-collide' ? key : `${name}\n${key}`);
  const live = (r: Rec, now: number): boolean => now < r.expiresAt || (m === 'ttl-ignored' && !r.inProgress);
  const held = (r: Rec | undefined, token: string, now: number): r is Rec =>
    r?.inProgress === true &&
    (m === 'no-fencing' || r.token === token) &&
    (m === 'expired-lease-holds' || now < r.expiresAt);
  return {
    async idempotencyBegin(cmd) {
      const now = Date.now();
      const k = id(cmd.name, cmd.key);
      const r = records.get(k);
      if (m === 'begin-not-atomic') await tick();
      if (r !== undefined && m === 'dead-record-mismatches' && r.hash !== cmd.payloadHash)
        return { outcome: 'mismatch', now };
      if (r !== undefined && live(r, now)) {
        const mismatch = m !== 'no-mismatch' && r.hash !== cmd.payloadHash;
        if (mismatch && (m !== 'mismatch-only-when-completed' || !r.inProgress))
          return { outcome: 'mismatch', now };
        if (!r.inProgress) return { outcome: 'completed', value: r.value, now };
        return { outcome: 'in-progress', retryAfterMs: r.expiresAt - now, now };
      }
      // The mutant carries a dead record's value over to the record that replaces it.
      const value = m === 'complete-keeps-old-value' ? (r?.value ?? '') : '';
      records.set(k, {
        inProgress: true,
        token: cmd.token,
        hash: cmd.payloadHash,
        value,
        expiresAt: now + cmd.leaseMs,
      });
      return {
        outcome: 'acquired',
        takeover: r?.inProgress === true,
        leaseExpiresAt: now + cmd.leaseMs,
        now,
      };
    },
    async idempotencyRenew(name, key, token, leaseMs) {
      const now = Date.now();
      const r = records.get(id(name, key));
      if (!held(r, token, now)) return false;
      if (m !== 'renew-does-not-extend') r.expiresAt = now + leaseMs;
      return true;
    },
    async idempotencyComplete(name, key, token, value, ttlMs) {
      const now = Date.now();
      const r = records.get(id(name, key));
      if (!held(r, token, now)) return false;
      r.inProgress = false;
      if (m !== 'complete-keeps-old-value' || r.value === '') r.value = value;
      r.expiresAt = now + ttlMs;
      return true;
    },
    async idempotencyRelease(name, key, token) {
      const now = Date.now();
      const k = id(name, key);
      const r = records.get(k);
      if (m === 'release-deletes-completed' && r !== undefined && !r.inProgress && r.token === token) {
        records.delete(k);
        return true;
      }
      if (!held(r, token, now)) return false;
      records.delete(k);
      return true;
    },
  };
}

const run = (m: Mutation) =>
  conformance.run(wrapStore(memoryStore(), model(m)), { suites: ['idempotency'], require: true });

describe('the idempotency suite catches one broken operation at a time', () => {
  it('the unbroken model passes it', async () => {
    const results = await run('none');
    expect(results.length).toBe(conformance.idempotencyCases.length);
    expect(results.flatMap((r) => r.failures)).toEqual([]);
  });

  const mutations: Exclude<Mutation, 'none'>[] = [
    'no-fencing',
    'expired-lease-holds',
    'no-mismatch',
    'mismatch-only-when-completed',
    'dead-record-mismatches',
    'begin-not-atomic',
    'ttl-ignored',
    'release-deletes-completed',
    'renew-does-not-extend',
    'names-collide',
    'complete-keeps-old-value',
  ];
  for (const m of mutations) {
    it(m, async () => {
      const failed = (await run(m)).filter((r) => r.failures.length > 0);
      expect(failed.length, `no idempotency case failed for ${m}`).toBeGreaterThan(0);
    });
  }
});
