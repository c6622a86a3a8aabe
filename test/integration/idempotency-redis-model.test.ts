import fc from 'fast-check';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/core/errors.js';
import { createRedisStore, escapeId } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { type Command, commands, EVERY_ANSWER } from '../support/idempotency-model.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

// The four idempotency operations on Redis, step by step against the memory store as the model.
// Redis decides on its own TIME, so the model's clock is set to the time the script decided at:
// begin answers it (`now`); a renew or complete that succeeded wrote now + lease (or + ttl) into
// the record, so it is read back exactly. Otherwise the script ran at some time in [T0, T1] (TIME
// read just before and just after it): a lease that was live at the script's time was live at
// T0, one that was dead is dead at T1, so a `true` is checked against the model at T0 and a
// `false` at T1. A wrong answer is caught unless a lease edge falls inside that interval.

// One sequence that reaches every answer, run before the random ones: the coverage check below
// then holds whatever the random runs happen to reach (25 runs on the Cluster do not always
// complete a key and begin it again).
const everyAnswer: Command[] = [
  { op: 'begin', caller: 0, key: 0, hash: 0, leaseMs: 160 }, // acquired
  { op: 'begin', caller: 1, key: 0, hash: 0, leaseMs: 160 }, // in-progress
  { op: 'begin', caller: 2, key: 0, hash: 1, leaseMs: 160 }, // mismatch
  { op: 'renew', caller: 0, leaseMs: 160 }, // renew:true
  { op: 'complete', caller: 0, value: '{"v":1}', ttlMs: 1000 }, // complete:true
  { op: 'begin', caller: 1, key: 0, hash: 0, leaseMs: 160 }, // completed
  { op: 'complete', caller: 0, value: '{"v":2}', ttlMs: 1000 }, // complete:false
  { op: 'renew', caller: 0, leaseMs: 160 }, // renew:false
  { op: 'begin', caller: 2, key: 1, hash: 0, leaseMs: 160 }, // acquired
  { op: 'release', caller: 2 }, // release:true
  { op: 'release', caller: 2 }, // release:false
  { op: 'begin', caller: 1, key: 1, hash: 0, leaseMs: 160 }, // acquired
  { op: 'sleep', ms: 200 }, // past its lease, within Redis's one-lease slack
  { op: 'begin', caller: 0, key: 1, hash: 0, leaseMs: 160 }, // acquired+takeover
];

async function serverMs(client: Redis | Cluster): Promise<number> {
  const [s, us] = (await client.call('TIME')) as [string, string];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

for (const mode of ['standalone', 'cluster'] as const) {
  describe(`idempotency operations on the Redis store (${mode}), against the memory store`, () => {
    const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    const prefix = runPrefix(`idem-model-${mode}`);
    const redis = createRedisStore({ client, prefix });
    const recordKey = (name: string, key: string) => `${prefix}{idem:${escapeId(name)}:${escapeId(key)}}:r`;
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });

    it('every step answers as the memory store does at the time Redis decided', async () => {
      let runs = 0;
      const seen = new Set<string>();
      await fc.assert(
        fc.asyncProperty(commands(false), async (cmds) => {
          const name = `m${runs++}`;
          let t = 0;
          const memory: Store = memoryStore({ clock: { now: () => t } });
          // Each caller's last begin: its key and token (a token never reused, as in `run`).
          const callers: ({ key: string; token: string } | undefined)[] = [];
          let tokens = 0;
          // Each key's last lease as Redis stored it: its end and length (see `takeover` below).
          const leases = new Map<string, { expiresAt: number; ms: number }>();
          for (const c of cmds) {
            if (c.op === 'sleep') {
              await new Promise((r) => setTimeout(r, c.ms));
              continue;
            }
            if (c.op === 'cleanup') continue; // none generated: Redis drops records by key expiry
            if (c.op === 'begin') {
              const command = {
                name,
                key: `k${c.key}`,
                payloadHash: c.hash === 0 ? '' : 'h1',
                token: `t${tokens++}`,
                leaseMs: c.leaseMs,
              };
              const got = await redis.idempotencyBegin!(command);
              t = got.now;
              const want = await memory.idempotencyBegin!(command);
              // `takeover` is the one answer that depends on when a dead record is dropped: Redis
              // keeps an in-progress record a lease past its lease (idempotency-batch.lua), the
              // memory store until its sweep (never, in runs this short). So a takeover is
              // expected from Redis while the dead record is within that slack (a ms either side
              // of its edge is left open: Redis expires keys on its own ms clock).
              const lease = leases.get(command.key);
              let expected = want;
              if (want.outcome === 'acquired' && got.outcome === 'acquired' && want.takeover && lease) {
                const edge = lease.expiresAt + lease.ms;
                if (Math.abs(t - edge) <= 2) expected = { ...want, takeover: got.takeover };
                else if (t > edge) expected = { ...want, takeover: false };
              }
              expect(got).toEqual(expected);
              if (got.outcome === 'acquired')
                leases.set(command.key, { expiresAt: got.leaseExpiresAt, ms: c.leaseMs });
              seen.add(got.outcome + ('takeover' in got && got.takeover ? '+takeover' : ''));
              callers[c.caller] = { key: command.key, token: command.token };
              continue;
            }
            const held = callers[c.caller] ?? { key: 'k0', token: 'never-issued' };
            const t0 = await serverMs(client);
            let got: boolean;
            if (c.op === 'renew') got = await redis.idempotencyRenew!(name, held.key, held.token, c.leaseMs);
            else if (c.op === 'complete')
              got = await redis.idempotencyComplete!(name, held.key, held.token, c.value, c.ttlMs);
            else got = await redis.idempotencyRelease!(name, held.key, held.token);
            const t1 = await serverMs(client);
            t = got ? t0 : t1;
            if (got && c.op !== 'release') {
              const e = await client.hget(recordKey(name, held.key), 'e');
              // Written by this very step: its now is e minus what it added.
              if (e !== null) t = Number(e) - (c.op === 'renew' ? c.leaseMs : c.ttlMs);
            }
            if (got && c.op === 'renew') leases.set(held.key, { expiresAt: t + c.leaseMs, ms: c.leaseMs });
            if (got && c.op !== 'renew') leases.delete(held.key);
            let want: boolean;
            if (c.op === 'renew')
              want = await memory.idempotencyRenew!(name, held.key, held.token, c.leaseMs);
            else if (c.op === 'complete')
              want = await memory.idempotencyComplete!(name, held.key, held.token, c.value, c.ttlMs);
            else want = await memory.idempotencyRelease!(name, held.key, held.token);
            expect({ step: c, got }).toEqual({ step: c, got: want });
            seen.add(`${c.op}:${got}`);
          }
        }),
        { numRuns: mode === 'cluster' ? 25 : 50, examples: [[everyAnswer]] },
      );
      // The runs reached every answer (a generator that never crossed a lease would prove little).
      for (const answer of EVERY_ANSWER) expect(seen).toContain(answer);
    }, 120_000);

    it('a lease that ran out is lost while its record is still stored (the slack), and begin then takes over', async () => {
      const name = 'slack';
      const begin = await redis.idempotencyBegin!({
        name,
        key: 'k',
        payloadHash: '',
        token: 'a',
        leaseMs: 50,
      });
      expect(begin).toMatchObject({ outcome: 'acquired', takeover: false });
      expect(begin.outcome === 'acquired' && begin.leaseExpiresAt - begin.now).toBe(50);
      // In progress: kept one lease past the lease (see idempotency-batch.lua).
      const pttl = await client.pttl(recordKey(name, 'k'));
      expect(pttl).toBeGreaterThan(50);
      expect(pttl).toBeLessThanOrEqual(100);
      await new Promise((r) => setTimeout(r, 65));
      expect(await client.exists(recordKey(name, 'k'))).toBe(1);
      expect(await redis.idempotencyRenew!(name, 'k', 'a', 50)).toBe(false);
      expect(await redis.idempotencyComplete!(name, 'k', 'a', 'v', 1000)).toBe(false);
      expect(await redis.idempotencyRelease!(name, 'k', 'a')).toBe(false);
      expect(await client.hget(recordKey(name, 'k'), 'd')).toBe('a'); // nothing changed
      const again = await redis.idempotencyBegin!({
        name,
        key: 'k',
        payloadHash: 'other',
        token: 'b',
        leaseMs: 1000,
      });
      expect(again).toMatchObject({ outcome: 'acquired', takeover: true });
      expect(await redis.idempotencyComplete!(name, 'k', 'b', 'v', 500)).toBe(true);
      // Completed: expires at its ttl, no slack.
      const ttl = await client.pttl(recordKey(name, 'k'));
      expect(ttl).toBeGreaterThan(400);
      expect(ttl).toBeLessThanOrEqual(500);
      expect(await client.hgetall(recordKey(name, 'k'))).toMatchObject({ s: 'c', h: 'other', d: 'v' });
    });

    it('one key per (name, key), escaped: pairs that read alike never meet, and each record is one slot', async () => {
      const pairs: [string, string][] = [
        ['a:b', 'c'],
        ['a', 'b:c'],
        ['a}', 'x'],
        ['a', '}x'],
        ['{n}', '%7B'],
      ];
      for (const [i, [name, key]] of pairs.entries()) {
        const r = await redis.idempotencyBegin!({
          name,
          key,
          payloadHash: '',
          token: `t${i}`,
          leaseMs: 5000,
        });
        expect(r.outcome).toBe('acquired');
      }
      for (const [i, [name, key]] of pairs.entries()) {
        expect(await redis.idempotencyComplete!(name, key, `t${i}`, String(i), 5000)).toBe(true);
      }
      for (const [i, [name, key]] of pairs.entries()) {
        const r = await redis.idempotencyBegin!({ name, key, payloadHash: '', token: 'late', leaseMs: 5000 });
        expect(r).toMatchObject({ outcome: 'completed', value: String(i) });
        expect(await client.exists(recordKey(name, key))).toBe(1);
      }
    });

    it('bad input is a typed error naming the argument, and writes nothing', async () => {
      const name = 'bad';
      const base = { name, key: 'k', payloadHash: '', token: 't', leaseMs: 1000 };
      const bad: [Promise<unknown>, string][] = [
        [redis.idempotencyBegin!({ ...base, key: 5 as never }), 'key'],
        [redis.idempotencyBegin!({ ...base, name: 'x\ud800' }), 'name'],
        [redis.idempotencyBegin!({ ...base, token: undefined as never }), 'token'],
        [redis.idempotencyBegin!({ ...base, leaseMs: 2 ** 52 + 1 }), 'leaseMs'],
        [redis.idempotencyBegin!({ ...base, leaseMs: 0 }), 'leaseMs'],
        [redis.idempotencyBegin!({ ...base, leaseMs: 1.5 }), 'leaseMs'],
        [redis.idempotencyBegin!({ ...base, payloadHash: 5 as never }), 'payloadHash'],
        [redis.idempotencyRenew!(name, 'k', 't', Number.NaN), 'leaseMs'],
        [redis.idempotencyComplete!(name, 'k', 't', 'v\udc00', 1000), 'value'],
        [redis.idempotencyComplete!(name, 'k', 't', 'v', -1), 'ttlMs'],
        [redis.idempotencyRelease!(name, 'k', 7 as never), 'token'],
      ];
      for (const [promise, path] of bad) {
        const err = await promise.catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect((err as InvalidArgumentError).path).toBe(path);
      }
      expect(await client.exists(recordKey(name, 'k'))).toBe(0);
    });
  });
}
