import type { Redis } from 'ioredis';

/** The shared Redis of this machine kind; CI starts it when it is not running. */
export const REDIS_URL = process.env['ONCEFLOW_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/** A key prefix unique to this test run: the shared server is never flushed. */
export function runPrefix(name: string): string {
  return `onceflow-test:${name}:${process.pid}:${Date.now().toString(36)}:`;
}

/** Deletes every key under `prefix` (SCAN, never FLUSHALL). */
export async function cleanupPrefix(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.unlink(...keys);
  } while (cursor !== '0');
}
