import { Cluster, type Redis } from 'ioredis';

/** Every key matching `pattern` on every master, as stored (SCAN, never KEYS). */
export async function keysMatching(
  client: Redis | Cluster,
  pattern: string,
  count = 1000,
): Promise<string[]> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      found.push(...keys);
    } while (cursor !== '0');
  }
  return found;
}
