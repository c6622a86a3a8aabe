// The Redis limiter against the memory model: the same generated sequences (several keys, single
// and multi-limit, every algorithm), one fake clock passed to both (client-clock mode), and every
// decision must be identical, field by field. Standalone Redis and the 3-master cluster.
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLimiter, type Decision, FakeClock, type LimitOptions, memoryStore } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { limitSets, type Step, steps, WINDOW } from '../property/limiter-sequences.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

const view = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  resetAt: d.resetAt,
  retryAfterMs: d.retryAfterMs,
  reason: d.reason,
  bound: d.bound,
  at: d.at,
  limits: d.limits,
});

const targets = [
  { name: 'standalone', client: () => new Redis(REDIS_URL) },
  { name: 'cluster', client: clusterClient },
] as const;

for (const target of targets) {
  describe(`limiter on Redis (${target.name}) = memory model`, () => {
    const client = target.client();
    const prefix = runPrefix(`limiter-model-${target.name}`);
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });
    let run = 0;

    /** Runs `seq` on a memory and a Redis limiter driven by one fake clock; every decision must be equal. */
    async function sameDecisions(
      limits: LimitOptions[],
      seq: Step[],
      costScale = 1,
      start = 1_000_000,
    ): Promise<void> {
      const clock = new FakeClock(start);
      const name = `run-${run++}`;
      const memory = createLimiter({ store: memoryStore({ clock }), clock, limits, name, blockCache: false });
      const redis = createLimiter({
        store: createRedisStore({ client, prefix }),
        clock,
        limits,
        name,
        blockCache: false,
        timeout: '5s',
      });
      for (const s of seq) {
        clock.set(clock.now() + s.advance);
        const cost = s.cost * costScale;
        const [m, r] = await Promise.all([memory.take(s.key, { cost }), redis.take(s.key, { cost })]);
        expect(view(r)).toEqual(view(m));
      }
    }

    it('gives identical decisions for the same sequence and clock', async () => {
      await fc.assert(
        // With clock rollbacks: every algorithm's step-back handling must match the model too.
        fc.asyncProperty(limitSets, steps(['a', 'b:c', '{x}'], true), (limits, seq) =>
          sameDecisions(limits, seq),
        ),
        { numRuns: 60 },
      );
    });

    it('clocks far from today match the model too: near 0, past 1e14 ms (Lua writes every number whole), near 2^52', async () => {
      await fc.assert(
        fc.asyncProperty(
          limitSets,
          steps(['a', 'b'], true),
          // 40 steps back of at most a window each stay above 0 from 50 000.
          fc.constantFrom(50_000, 100_000_000_000_007, 2 ** 50, 2 ** 52 - 10_000_000),
          (limits, seq, start) => sameDecisions(limits, seq, 1, start),
        ),
        { numRuns: 30 },
      );
    });

    it('a time outside [0, 2^52) is a typed error on both stores, and changes nothing', async () => {
      for (const algorithm of ['sliding-log', 'gcra'] as const) {
        const clock = new FakeClock(1_000);
        const name = `range-${run++}`;
        // 600: the sorted-set form of the sliding log on Redis, whose scores sit at 2^52 + value.
        const limits: LimitOptions[] = [{ algorithm, limit: 600, window: 1000 }];
        const both = [
          createLimiter({ store: memoryStore({ clock }), clock, limits, name, blockCache: false }),
          createLimiter({
            store: createRedisStore({ client, prefix }),
            clock,
            limits,
            name,
            blockCache: false,
          }),
        ];
        for (const limiter of both) await limiter.take('k', { cost: 5 });
        for (const bad of [-1, 2 ** 52, 2 ** 52 + 5000]) {
          clock.set(bad);
          for (const limiter of both) {
            await expect(limiter.take('k', { cost: 1 })).rejects.toMatchObject({
              code: 'ERR_INVALID_ARGUMENT',
            });
          }
        }
        clock.set(1_001);
        const [m, r] = await Promise.all(both.map((l) => l.take('k', { cost: 0 })));
        expect(m?.remaining).toBe(595);
        expect(view(r as Decision)).toEqual(view(m as Decision));
      }
    });

    it('a key written on a caller clock outlives its window by the client slack (a fake clock may stand still)', async () => {
      const name = `ttl-${run++}`;
      const clock = new FakeClock(1_000_000);
      const store = createRedisStore({ client, prefix });
      const onClient = createLimiter({
        store,
        clock,
        name,
        algorithm: 'gcra',
        limit: 1,
        window: '1s',
        blockCache: false,
      });
      const onServer = createLimiter({
        store,
        name: `${name}-s`,
        algorithm: 'gcra',
        limit: 1,
        window: '1s',
        blockCache: false,
      });
      await onClient.take('k');
      await onServer.take('k');
      const ttls: Record<string, number> = {};
      // Every master's keys (a cluster client's KEYS asks one node only).
      const nodes = client instanceof Redis ? [client] : client.nodes('master');
      for (const node of nodes) {
        for (const key of await node.keys(`${prefix}*${name}*`)) {
          ttls[key.includes(`${name}-s`) ? 'server' : 'client'] = await client.pttl(key);
        }
      }
      expect(ttls.client).toBeGreaterThan(600_000);
      expect(ttls.server).toBeLessThanOrEqual(2_000);
    });

    it("a sliding log as a string matches the model at every entry's own window edge", async () => {
      // The string log keeps each entry as a delta from the one before and the first entry's
      // time in its header: several entries live at once, the clock stepping by a few ms and by
      // W - 2 .. W + 1, lands on the edge of each entry in turn (drops of one entry, of several,
      // of all; refusals that need several entries freed).
      const near = fc.constantFrom(0, 1, 2, 3, WINDOW - 2, WINDOW - 1, WINDOW, WINDOW + 1);
      const step = fc.record({
        advance: fc.oneof(
          { arbitrary: near, weight: 4 },
          { arbitrary: fc.integer({ min: 0, max: WINDOW }), weight: 1 },
        ),
        cost: fc.oneof(
          { arbitrary: fc.constant(1), weight: 3 },
          { arbitrary: fc.integer({ min: 0, max: 4 }), weight: 1 },
        ),
        key: fc.constant('k'),
      });
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 8 }),
          fc.array(step, { minLength: 1, maxLength: 60 }),
          (limit, seq) => sameDecisions([{ algorithm: 'sliding-log', limit, window: WINDOW }], seq),
        ),
        { numRuns: 120 },
      );
    });

    it('a sliding log above limit 512 (a sorted set on Redis, not a string) matches the model too', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 513, max: 700 }),
          steps(['a', 'b'], true),
          fc.integer({ min: 40, max: 120 }),
          // Costs scaled up so that a few requests fill the log and refusals happen.
          (limit, seq, scale) =>
            sameDecisions([{ algorithm: 'sliding-log', limit, window: 1000 }], seq, scale),
        ),
        { numRuns: 30 },
      );
    });

    it('batches concurrent decisions in call order, as if one after the other', async () => {
      const clock = new FakeClock(5_000_000);
      const limits: LimitOptions[] = [{ algorithm: 'sliding-log', limit: 50, window: '1s' }];
      const memory = createLimiter({
        store: memoryStore({ clock }),
        clock,
        limits,
        name: 'batch',
        blockCache: false,
      });
      const redis = createLimiter({
        store: createRedisStore({ client, prefix }),
        clock,
        limits,
        name: 'batch',
        blockCache: false,
        timeout: '5s',
      });
      const calls = Array.from({ length: 300 }, (_, i) => ({ key: `k${i % 7}`, cost: (i % 5) + 1 }));
      const fromRedis = await Promise.all(calls.map((c) => redis.take(c.key, { cost: c.cost })));
      for (const [i, c] of calls.entries())
        expect(view(fromRedis[i] as Decision)).toEqual(view(await memory.take(c.key, { cost: c.cost })));
    });
  });
}
