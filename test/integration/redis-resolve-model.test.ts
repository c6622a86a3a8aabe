import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { runScenario, scenarios } from '../support/resolve-model.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

for (const mode of ['standalone', 'cluster'] as const) {
  describe(`Ledger.resolve on the Redis store (${mode}), against the model and the memory store`, () => {
    const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    const prefix = runPrefix(`resolve-model-${mode}`);
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });

    it('every stale answer resolved: never booked twice, the model outcome, and the same outcomes and state as memory', async () => {
      let runs = 0;
      let stale = 0;
      const resolved: Record<string, number> = { applied: 0, duplicate: 0, unknown: 0 };
      await fc.assert(
        fc.asyncProperty(scenarios(['p1']), async (s) => {
          const name = `m${runs++}`;
          // One owner: the memory store's retention per ledger drops what Redis's per owner drops.
          const memory = await runScenario(
            memoryStore({ journal: { maxEntries: s.keep ?? Number.POSITIVE_INFINITY } }),
            name,
            s,
            false,
          );
          const journal = s.keep === undefined ? {} : { maxEntriesPerOwner: s.keep };
          const redis = await runScenario(createRedisStore({ client, prefix, journal }), name, s, true);
          expect(redis).toEqual(memory);
          stale += redis.stale;
          for (const [k, v] of Object.entries(redis.resolved)) resolved[k] = (resolved[k] ?? 0) + v;
        }),
        { numRuns: mode === 'cluster' ? 40 : 100 },
      );
      expect(stale).toBeGreaterThan(mode === 'cluster' ? 100 : 300);
      for (const outcome of ['applied', 'duplicate', 'unknown'])
        expect(resolved[outcome]).toBeGreaterThan(10);
    });
  });
}
