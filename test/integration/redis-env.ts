import { Cluster, Redis } from 'ioredis';
import { afterAll, inject } from 'vitest';

/** The standalone Redis for this run (the shared 6379, or one the global setup started). */
export const REDIS_URL = inject('redisUrl');

/** A client for the 3-master cluster the global setup started. */
export function clusterClient(): Cluster {
  return new Cluster(
    inject('clusterPorts').map((port) => ({ host: '127.0.0.1', port })),
    { redisOptions: { maxRetriesPerRequest: 20 } },
  );
}

/** A key prefix unique to this test run: the shared server is never flushed. */
export function runPrefix(name: string): string {
  return `onceflow-test:${name}:${process.pid}:${Date.now().toString(36)}:`;
}

/** Deletes every key under `prefix` on one node (SCAN + UNLINK, never FLUSHALL). */
export async function cleanupPrefix(client: Redis | Cluster, prefix: string): Promise<void> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      // One UNLINK per key: keys of different slots cannot share a command on a cluster node.
      for (const key of keys) await node.unlink(key);
    } while (cursor !== '0');
  }
}

/** A client with a `keyPrefix`, and a plain one to the same server that sees the keys as stored. */
export interface PrefixedTarget {
  readonly name: 'standalone' | 'cluster';
  readonly client: Redis | Cluster;
  readonly raw: Redis | Cluster;
}

/**
 * Clients with `keyPrefix` to the standalone Redis and to the cluster, each beside a plain one
 * (which cleans up and looks for keys written elsewhere). After the enclosing suite, the keys under
 * `keyPrefix` are deleted and every client closed.
 */
export function prefixedTargets(keyPrefix: string): PrefixedTarget[] {
  const targets: PrefixedTarget[] = [
    { name: 'standalone', client: new Redis(REDIS_URL, { keyPrefix }), raw: new Redis(REDIS_URL) },
    {
      name: 'cluster',
      client: new Cluster(
        inject('clusterPorts').map((port) => ({ host: '127.0.0.1', port })),
        { keyPrefix, redisOptions: { maxRetriesPerRequest: 20 } },
      ),
      raw: clusterClient(),
    },
  ];
  afterAll(async () => {
    for (const { client, raw } of targets) {
      await cleanupPrefix(raw, keyPrefix);
      client.disconnect();
      raw.disconnect();
    }
  });
  return targets;
}
