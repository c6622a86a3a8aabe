import { createLedger, type Ledger } from '../index.js';
import { SETTLEMENT_CAPACITY } from './onceflow-strategy.js';

/**
 * Opens the demo's settlement ledger on Redis. ioredis is an optional peer dependency of
 * onceflow, so it is loaded only here, when `--redis` is used, with a clear message if missing.
 */
export async function openRedisLedger(
  url: string,
  prefix: string,
): Promise<{ ledger: Ledger; close(): Promise<void>; cleanup(): Promise<number> }> {
  let Redis: typeof import('ioredis').Redis;
  try {
    ({ Redis } = await import('ioredis'));
  } catch (cause) {
    throw new Error('`--redis` needs the ioredis package: npm install ioredis', { cause });
  }
  const { createRedisStore } = await import('../redis/index.js');
  const client = new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: true });
  await client.connect();
  // The journal is not read by the demo (it reads per-room totals): keep none, bounded memory.
  const store = createRedisStore({ client, prefix, journal: { maxEntries: 0 } });
  return {
    ledger: createLedger({ store, capacity: SETTLEMENT_CAPACITY }),
    async close() {
      await client.quit();
    },
    // Removes the run's keys (SCAN + UNLINK under the run's own prefix; never FLUSHALL).
    async cleanup() {
      let removed = 0;
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) removed += await client.unlink(...keys);
      } while (cursor !== '0');
      return removed;
    },
  };
}
