// The Redis idempotency operations of one event-loop turn go in one script call per hash slot
// (src/redis/idempotency-ops.ts): counted here on a client that records every command it is
// given. Each entry answers as it would alone (the memory store as the model), in call order;
// one entry's Redis error fails that entry only; the batch is bounded by count and bytes; on a
// Cluster a call holds keys of one slot; a lost reply reaches each entry of the batch as it would
// have reached that call alone.
import { type Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/core/errors.js';
import { IDEMPOTENCY_MAX_BATCH, IDEMPOTENCY_MAX_BATCH_BYTES } from '../../src/redis/idempotency-ops.js';
import { createRedisStore, escapeId, type RedisLike } from '../../src/redis/index.js';
import { keySlot } from '../../src/redis/slot.js';
import type { IdempotencyBeginCommand } from '../../src/store/idempotency.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

/** A client that passes every command on and records the key lists of its script calls. */
function recording(client: Redis | Cluster): { client: RedisLike; scripts: string[][] } {
  const scripts: string[][] = [];
  const wrapped = {
    isCluster: (client as { isCluster?: boolean }).isCluster === true,
    get status() {
      return client.status;
    },
    call(command: string, ...args: (string | number)[]) {
      // EVALSHA only: one per script call (an EVAL after NOSCRIPT is the same call again).
      if (command === 'EVALSHA') {
        const n = Number(args[1]);
        scripts.push(args.slice(2, 2 + n).map(String));
      }
      return client.call(command, ...args);
    },
  };
  return { client: wrapped, scripts };
}

const begin = (name: string, key: string, token: string, payloadHash = ''): IdempotencyBeginCommand => ({
  name,
  key,
  payloadHash,
  token,
  leaseMs: 60_000,
});

/** What an answer is, without the times (Redis and the model run on different clocks). */
function shape(reply: unknown): unknown {
  if (typeof reply !== 'object' || reply === null) return reply;
  const { now: _now, leaseExpiresAt: _at, retryAfterMs: _after, ...rest } = reply as Record<string, unknown>;
  return rest;
}

describe('Redis idempotency batches (standalone)', () => {
  const direct = new Redis(REDIS_URL);
  const prefix = runPrefix('idem-batch');
  afterAll(async () => {
    await cleanupPrefix(direct, prefix);
    direct.disconnect();
  });

  it('calls of one turn share one script call, in call order, each answered as the memory store answers it', async () => {
    const { client, scripts } = recording(direct);
    const redis = createRedisStore({ client, prefix });
    const memory = memoryStore();
    const stores: Store[] = [redis, memory];
    // Set up untimed: k1 completed, k2 held by t2, k3 held by t3.
    for (const store of stores) {
      await store.idempotencyBegin!(begin('o', 'k1', 't1', 'h'));
      await store.idempotencyComplete!('o', 'k1', 't1', '{"v":1}', 60_000);
      await store.idempotencyBegin!(begin('o', 'k2', 't2'));
      await store.idempotencyBegin!(begin('o', 'k3', 't3'));
    }
    // Every op and every answer, in one turn; k4 is begun twice (the second finds the first's
    // lease) and then completed, k3 released and then begun again, in that order.
    const turn = (store: Store) => [
      store.idempotencyBegin!(begin('o', 'k1', 'x', 'h')), // completed
      store.idempotencyBegin!(begin('o', 'k1', 'x', 'other')), // mismatch
      store.idempotencyBegin!(begin('o', 'k2', 'x')), // in-progress
      store.idempotencyRenew!('o', 'k2', 't2', 60_000), // true
      store.idempotencyRenew!('o', 'k2', 'x', 60_000), // false
      store.idempotencyBegin!(begin('o', 'k4', 'a')), // acquired
      store.idempotencyBegin!(begin('o', 'k4', 'b')), // in-progress: a's lease, a turn earlier in the batch
      store.idempotencyComplete!('o', 'k4', 'a', '"\u0000é😀"', 60_000), // true
      store.idempotencyComplete!('o', 'k4', 'a', 'again', 60_000), // false: completed already
      store.idempotencyBegin!(begin('o', 'k4', 'c')), // completed, with a's value
      store.idempotencyRelease!('o', 'k3', 'x'), // false
      store.idempotencyRelease!('o', 'k3', 't3'), // true
      store.idempotencyBegin!(begin('o', 'k3', 'y')), // acquired, no takeover (released)
    ];
    const before = scripts.length;
    const got = await Promise.all(turn(redis));
    expect(scripts.length - before).toBe(1);
    expect(scripts[before]).toHaveLength(13);
    const want = await Promise.all(turn(memory));
    expect(got.map(shape)).toEqual(want.map(shape));
    // And the values, spelled out: a batch that answered every entry alike would fail here.
    expect(got.map(shape)).toEqual([
      { outcome: 'completed', value: '{"v":1}' },
      { outcome: 'mismatch' },
      { outcome: 'in-progress' },
      true,
      false,
      { outcome: 'acquired', takeover: false },
      { outcome: 'in-progress' },
      true,
      false,
      { outcome: 'completed', value: '"\u0000é😀"' },
      false,
      true,
      { outcome: 'acquired', takeover: false },
    ]);
    // One TIME per batch: every begin of it answers the same now, and a lease from it.
    const times = got.flatMap((r) => (typeof r === 'object' ? [r.now] : []));
    expect(new Set(times).size).toBe(1);
    const acquired = got[5] as { leaseExpiresAt: number; now: number };
    expect(acquired.leaseExpiresAt).toBe(acquired.now + 60_000);
    expect((got[6] as { retryAfterMs: number }).retryAfterMs).toBe(60_000);
  });

  it('a lone sequential caller sends one script call per operation', async () => {
    const { client, scripts } = recording(direct);
    const redis = createRedisStore({ client, prefix });
    expect((await redis.idempotencyBegin!(begin('lone', 'k', 't'))).outcome).toBe('acquired');
    expect(await redis.idempotencyComplete!('lone', 'k', 't', 'v', 60_000)).toBe(true);
    expect((await redis.idempotencyBegin!(begin('lone', 'k', 'u'))).outcome).toBe('completed');
    expect(scripts.map((keys) => keys.length)).toEqual([1, 1, 1]);
  });

  it(`at most ${IDEMPOTENCY_MAX_BATCH} entries per script call`, async () => {
    const { client, scripts } = recording(direct);
    const redis = createRedisStore({ client, prefix });
    const n = 2 * IDEMPOTENCY_MAX_BATCH + 3;
    const replies = await Promise.all(
      Array.from({ length: n }, (_, i) => redis.idempotencyBegin!(begin('count', `k${i}`, `t${i}`))),
    );
    expect(replies.every((r) => r.outcome === 'acquired')).toBe(true);
    expect(scripts.map((keys) => keys.length)).toEqual([IDEMPOTENCY_MAX_BATCH, IDEMPOTENCY_MAX_BATCH, 3]);
  });

  it('large values split a batch by bytes; a value over the bound goes alone', async () => {
    const { client, scripts } = recording(direct);
    const redis = createRedisStore({ client, prefix });
    // Counted as 3 bytes per UTF-16 unit: three such values fit in a call, a fourth does not.
    const third = 'v'.repeat(Math.floor(IDEMPOTENCY_MAX_BATCH_BYTES / 3 / 3) - 100);
    const huge = 'w'.repeat(Math.ceil(IDEMPOTENCY_MAX_BATCH_BYTES / 3) + 1);
    const values = [third, third, third, third, 'small', huge, 'small'];
    await Promise.all(values.map((_, i) => redis.idempotencyBegin!(begin('bytes', `k${i}`, `t${i}`))));
    const before = scripts.length;
    const done = await Promise.all(
      values.map((value, i) => redis.idempotencyComplete!('bytes', `k${i}`, `t${i}`, value, 60_000)),
    );
    expect(done).toEqual(values.map(() => true));
    expect(scripts.slice(before).map((keys) => keys.length)).toEqual([3, 2, 1, 1]);
    for (const [i, value] of values.entries()) {
      const reply = await redis.idempotencyBegin!(begin('bytes', `k${i}`, 'late'));
      expect(reply).toMatchObject({ outcome: 'completed', value });
    }
  });

  it("one entry's Redis error fails that entry only, as a StoreError; the rest of its batch stands", async () => {
    const { client, scripts } = recording(direct);
    const redis = createRedisStore({ client, prefix });
    const record = `${prefix}{idem:${escapeId('err')}:${escapeId('bad')}}:r`;
    await direct.set(record, 'not a hash'); // WRONGTYPE for HMGET
    const before = scripts.length;
    const results = await Promise.allSettled([
      redis.idempotencyBegin!(begin('err', 'a', 't')),
      redis.idempotencyBegin!(begin('err', 'bad', 't')),
      redis.idempotencyComplete!('err', 'bad', 't', 'v', 60_000),
      redis.idempotencyBegin!(begin('err', 'b', 't')),
    ]);
    expect(scripts.length - before).toBe(1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    for (const i of [1, 2]) {
      const reason = (results[i] as PromiseRejectedResult).reason as StoreError;
      expect(reason).toBeInstanceOf(StoreError);
      expect(reason.message).toMatch(i === 1 ? /idempotencyBegin/ : /idempotencyComplete/);
      expect(String((reason.cause as Error).message)).toMatch(/WRONGTYPE/);
      // Not retriable: the same call meets the same key of another type.
      expect(reason.retriable).toBe(false);
    }
    expect(await direct.get(record)).toBe('not a hash');
    expect((await redis.idempotencyBegin!(begin('err', 'a', 'u'))).outcome).toBe('in-progress');
  });

  it('a bad argument is refused before it is queued, and spoils no other call of its turn', async () => {
    const redis = createRedisStore({ client: direct, prefix });
    const good = redis.idempotencyBegin!(begin('arg', 'k', 't'));
    await expect(redis.idempotencyBegin!(begin('arg', 'k\ud800', 't'))).rejects.toThrow(/`key`/);
    await expect(redis.idempotencyComplete!('arg', 'k', 't', 'v', 0)).rejects.toThrow(/`ttlMs`/);
    expect((await good).outcome).toBe('acquired');
  });

  it('a failed script call fails each of its entries with what the failure says about it', async () => {
    const turn = async (client: RedisLike) => {
      const redis = createRedisStore({ client, prefix });
      const settled = await Promise.allSettled([
        redis.idempotencyBegin!(begin('fake', 'a', 't')),
        redis.idempotencyComplete!('fake', 'b', 't', 'v', 60_000),
      ]);
      return settled.map((r) => {
        const reason = (r as PromiseRejectedResult).reason as StoreError;
        expect(reason).toBeInstanceOf(StoreError);
        return [reason.operation, reason.outcome, reason.retriable];
      });
    };
    // A reply that is not the script's shape: nothing is known of what ran.
    expect(await turn({ call: async () => 'OK' })).toEqual([
      ['idempotencyBegin', 'unknown', false],
      ['idempotencyComplete', 'unknown', false],
    ]);
    // The connection failed with the call sent: it may have run, and may succeed again.
    const dropped = async () => {
      throw new Error('Connection is closed.');
    };
    expect(await turn({ call: dropped })).toEqual([
      ['idempotencyBegin', 'unknown', true],
      ['idempotencyComplete', 'unknown', true],
    ]);
    // A closed client refuses the call without sending it.
    expect(await turn(Object.assign({ call: dropped }, { status: 'end' }))).toEqual([
      ['idempotencyBegin', 'not-applied', false],
      ['idempotencyComplete', 'not-applied', false],
    ]);
  });

  it('a lost reply reaches every entry of the batch as it would have reached each call alone', async () => {
    const port = Number(new URL(REDIS_URL).port || 6379);
    const proxy = await startTcpProxy(port);
    const resending = new Redis({ host: '127.0.0.1', port: proxy.port, retryStrategy: () => 20 });
    const notResending = new Redis({
      host: '127.0.0.1',
      port: proxy.port,
      retryStrategy: () => 20,
      // Fails what was in flight at the first reconnect instead of sending it again.
      maxRetriesPerRequest: 0,
    });
    resending.on('error', () => {});
    notResending.on('error', () => {});
    try {
      const x = createRedisStore({ client: resending, prefix });
      await resending.ping();
      await x.idempotencyBegin!(begin('lost', 'done', 't0'));
      // ioredis sends the batch again once it reconnects: each entry ran twice and is answered
      // by its second run, as a single call is: a begin finds its own lease, a complete finds
      // its record completed (the value is stored; `false`, which `run` reports as a lost lease).
      proxy.loseNextReply();
      const again = await Promise.all([
        x.idempotencyBegin!(begin('lost', 'k1', 't1')),
        x.idempotencyBegin!(begin('lost', 'k2', 't2')),
        x.idempotencyComplete!('lost', 'done', 't0', 'v', 60_000),
      ]);
      expect(proxy.killed).toBe(1);
      expect(again.map(shape)).toEqual([{ outcome: 'in-progress' }, { outcome: 'in-progress' }, false]);
      expect((await x.idempotencyBegin!(begin('lost', 'done', 'u'))).outcome).toBe('completed');

      // Not sent again: every entry fails alike, `unknown` (the script may have run) and retriable.
      const y = createRedisStore({ client: notResending, prefix });
      await notResending.ping();
      proxy.loseNextReply();
      const failed = await Promise.allSettled([
        y.idempotencyBegin!(begin('lost', 'k3', 't3')),
        y.idempotencyRenew!('lost', 'k1', 't1', 60_000),
        y.idempotencyRelease!('lost', 'k2', 't2'),
      ]);
      expect(proxy.killed).toBe(2);
      for (const r of failed) {
        expect(r.status).toBe('rejected');
        const reason = (r as PromiseRejectedResult).reason as StoreError;
        expect(reason).toBeInstanceOf(StoreError);
        expect({ outcome: reason.outcome, retriable: reason.retriable }).toEqual({
          outcome: 'unknown',
          retriable: true,
        });
      }
      // They had run: k3 is held by t3, k2 released.
      expect((await x.idempotencyBegin!(begin('lost', 'k3', 'z'))).outcome).toBe('in-progress');
      expect((await x.idempotencyBegin!(begin('lost', 'k2', 'z'))).outcome).toBe('acquired');
    } finally {
      resending.disconnect();
      notResending.disconnect();
      await proxy.close();
    }
  });
});

describe('Redis idempotency batches (cluster)', () => {
  const cluster = clusterClient();
  const prefix = runPrefix('idem-batch-cluster');
  afterAll(async () => {
    await cleanupPrefix(cluster, prefix);
    cluster.disconnect();
  });

  it('one script call per hash slot, each holding only keys of its slot', async () => {
    const { client, scripts } = recording(cluster);
    const redis = createRedisStore({ client, prefix });
    const recordKey = (key: string) => `${prefix}{idem:${escapeId('c')}:${escapeId(key)}}:r`;
    // 200 keys, mostly of slots of their own, and 4 more found in k0's slot: those share a call.
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const slot = keySlot(recordKey('k0'));
    for (let j = 0; keys.length < 204; j++) if (keySlot(recordKey(`s${j}`)) === slot) keys.push(`s${j}`);
    const slots = new Set(keys.map((key) => keySlot(recordKey(key))));
    const replies = await Promise.all(
      keys.map((key, i) => redis.idempotencyBegin!(begin('c', key, `t${i}`))),
    );
    expect(replies.every((r) => r.outcome === 'acquired')).toBe(true);
    expect(scripts).toHaveLength(slots.size);
    for (const call of scripts) expect(new Set(call.map(keySlot)).size).toBe(1);
    const ofK0 = scripts.find((call) => call.includes(recordKey('k0')));
    expect(ofK0?.length).toBeGreaterThanOrEqual(5);
    const done = await Promise.all(
      keys.map((key, i) => redis.idempotencyComplete!('c', key, `t${i}`, `v${i}`, 60_000)),
    );
    expect(done.every((d) => d === true)).toBe(true);
    const replays = await Promise.all(keys.map((key) => redis.idempotencyBegin!(begin('c', key, 'late'))));
    expect(replays.map((r) => r.outcome === 'completed' && r.value)).toEqual(keys.map((_, i) => `v${i}`));
  });
});
