import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/core/errors.js';
import type { SessionRef } from '../../src/ws/session-state.js';
import { MemorySessionState } from '../../src/ws/session-state-memory.js';
import { RedisSessionState } from '../../src/ws/session-state-redis.js';
import { checkRun, simSteps, simulate } from '../support/ws-inbound-sim.js';
import { runOps, sessionOps } from '../support/ws-session-ops.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

const prefix = runPrefix('ws-session');
const targets = [
  { name: 'standalone', client: new Redis(REDIS_URL) },
  { name: 'cluster', client: clusterClient() },
] as const;
afterAll(async () => {
  for (const { client } of targets) {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  }
});

let sessions = 0;
/** A session no other run of this file used: the state of one run never leaks into the next. */
const fresh = (user = 'u-1'): SessionRef => ({ user, session: `s${String(++sessions).padStart(21, '0')}` });
const handled = { outcome: 'handled' } as const;

describe.each(targets)('RedisSessionState ($name)', ({ client }) => {
  const store = (maxInFlight: number, sessionTtlMs = 60_000) =>
    new RedisSessionState({ client, prefix, maxInFlight, sessionTtlMs });

  it('answers as the memory store does on random operations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), sessionOps(), async (m, ops) => {
        const session = fresh().session;
        const refs = [
          { user: 'u-1', session },
          { user: 'u:{2}', session },
        ];
        const memory = await runOps(
          new MemorySessionState({ maxInFlight: m, sessionTtlMs: 60_000 }),
          refs,
          ops,
        );
        expect(await runOps(store(m), refs, ops)).toEqual(memory);
      }),
      { numRuns: 40 },
    );
  });

  it('gives every seq one outcome in seq order over random schedules across three nodes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 15 }),
        simSteps(3),
        async (m, total, steps) => {
          const nodes = [store(m), store(m), store(m)];
          const run = await simulate(nodes, fresh(), steps, total);
          expect(checkRun(run, total)).toBeNull();
        },
      ),
      { numRuns: 25 },
    );
  });

  it('leases a running seq: the new writer waits, the replaced holder still records it, then it is decided', async () => {
    const s = store(4);
    const ref = fresh();
    const a = await s.open(ref);
    expect(await s.begin(ref, a.token, 1, 'x')).toEqual({ kind: 'run' });
    const b = await s.open(ref);
    const busy = await s.begin(ref, b.token, 1, 'x');
    expect(busy.kind).toBe('busy');
    const wait = (busy as { retryAfterMs: number }).retryAfterMs;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(s.leaseMs);
    expect(await s.record(ref, a.token, 2, 'y', handled)).toEqual({ kind: 'replaced' });
    expect(await s.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'recorded' });
    expect(await client.exists(s.leaseKey(ref))).toBe(0);
    expect(await s.begin(ref, b.token, 1, 'x')).toEqual({
      kind: 'decided',
      outcome: handled,
      duplicate: true,
    });
  });

  it('a lease that ran out lets the new writer run the seq; the old holder then records nothing', async () => {
    const s = new RedisSessionState({ client, prefix, maxInFlight: 4, sessionTtlMs: 60_000, leaseMs: 200 });
    const ref = fresh();
    const a = await s.open(ref);
    expect(await s.begin(ref, a.token, 1, 'x')).toEqual({ kind: 'run' });
    const b = await s.open(ref);
    // Redis expires a key at its deadline or later, never before: wait past it.
    await sleep(500);
    expect(await s.begin(ref, b.token, 1, 'x')).toEqual({ kind: 'run', again: true });
    expect(await s.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'replaced' });
    expect(await s.record(ref, b.token, 1, 'x', handled)).toEqual({ kind: 'recorded' });
  });

  it('a released seq is a first run again, not `again`; a release by another token changes nothing', async () => {
    const s = new RedisSessionState({
      client,
      prefix,
      maxInFlight: 4,
      sessionTtlMs: 60_000,
      leaseMs: 60_000,
    });
    const ref = fresh();
    const a = await s.open(ref);
    expect(await s.begin(ref, a.token, 1, 'x')).toEqual({ kind: 'run' });
    expect(await s.release(ref, 'someone-else-token', 1)).toBe(false);
    expect(await s.release(ref, a.token, 2)).toBe(false);
    expect(await s.release(ref, a.token, 1)).toBe(true);
    expect(await client.exists(s.leaseKey(ref))).toBe(0);
    const b = await s.open(ref);
    expect(await s.begin(ref, b.token, 1, 'x')).toEqual({ kind: 'run' });
  });

  it('forgets a session sessionTtlMs after its last operation', async () => {
    const s = store(4, 1000);
    const ref = fresh();
    const a = await s.open(ref);
    expect(await s.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'recorded' });
    expect(await client.pttl(s.key(ref))).toBeGreaterThan(0);
    // Redis expires a key at its deadline or later, never before: wait past it.
    await sleep(1500);
    expect(await s.begin(ref, a.token, 2, 'y')).toEqual({ kind: 'expired' });
    const b = await s.open(ref);
    expect({ continued: b.continued, nextSeq: b.nextSeq }).toEqual({ continued: false, nextSeq: 1 });
    expect(await s.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'replaced' });
  });

  it('touch keeps the state of a silent connection past sessionTtlMs', async () => {
    const s = store(4, 2000);
    const ref = fresh();
    const a = await s.open(ref);
    // 2.8 s in all, past the 2 s TTL; each touch 0.7 s after the last, so a loaded machine has
    // 1.3 s of slack per interval before the test could see an expiry it did not cause.
    for (let i = 0; i < 4; i++) {
      await sleep(700);
      expect(await s.touch(ref, a.token)).toEqual({ kind: 'touched' });
    }
    expect(await s.begin(ref, a.token, 1, 'x')).toEqual({ kind: 'run' });
  });

  it('keeps a session in one hash slot under the prefix, with seqs up to 2^53 - 1', async () => {
    const s = store(2);
    const ref = fresh('u:{x}');
    expect(s.key(ref)).toBe(`${prefix}{ws:u%3A%7Bx%7D:${ref.session}}:s`);
    const { token } = await s.open(ref);
    const big = 2 ** 53 - 3;
    await client.hset(s.key(ref), 'n', String(big));
    for (const seq of [big, big + 1, big + 2])
      expect(await s.record(ref, token, seq, `m${seq}`, handled)).toEqual({ kind: 'recorded' });
    // The window of 2 dropped big (its field named by the script's own integer text).
    expect(await s.begin(ref, token, big, `m${big}`)).toEqual({ kind: 'forgotten' });
    expect(await s.begin(ref, token, big + 2, `m${big + 2}`)).toMatchObject({ kind: 'decided' });
    expect(await client.hexists(s.key(ref), `i:m${big}`)).toBe(0);
    expect((await s.open(ref)).nextSeq).toBe(2 ** 53);
  });

  it('refuses bad input with a typed error, writing nothing', async () => {
    const s = store(2);
    const ref = fresh();
    await expect(s.open({ user: 'u', session: 'bad session!!!!!!' })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(s.begin(ref, 'tok', 0, 'x')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(s.record(ref, 'tok', 1, 'x', { outcome: 'nope' } as never)).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    expect(await client.exists(s.key(ref))).toBe(0);
    expect(
      () => new RedisSessionState({ client, prefix, maxInFlight: 2, sessionTtlMs: 1000, prefx: '' } as never),
    ).toThrow(/did you mean `prefix`/);
  });
});
