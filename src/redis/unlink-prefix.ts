/** What {@link unlinkPrefix} calls on a client (an ioredis `Redis` has both). */
export interface ScanUnlinkClient {
  scan(
    cursor: string,
    match: 'MATCH',
    pattern: string,
    count: 'COUNT',
    n: number,
  ): Promise<[string, string[]]>;
  unlink(...keys: string[]): Promise<number>;
}

/**
 * Removes every key under `prefix` on one standalone server: SCAN a page of 1,000 at a time (never
 * KEYS, which blocks the server) and UNLINK each page (freed off the main thread). Internal, for
 * the demo's cleanup and the benchmarks': a store's own keys are removed with the store's methods.
 */
export async function unlinkPrefix(client: ScanUnlinkClient, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.unlink(...keys);
  } while (cursor !== '0');
}
