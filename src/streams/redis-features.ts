import type { RedisLike } from '../redis/eval.js';

/**
 * Whether the server has Redis 8.6's idempotent XADD (`XADD key IDMP producer-id iid ...`, with
 * `XCFGSET` for its bounds): read from `COMMAND DOCS XADD`, which lists the command's arguments
 * (Redis >= 7.0, the floor), so no version string is parsed and a server that backports it counts.
 * False on any failure to read (an ACL refusing COMMAND, a proxy that hides it): the script path
 * is correct everywhere.
 *
 * The producer's dedup stays the script on every server for now, and this is why: IDMP keeps at
 * most 10 000 ids per producer id for at most 86 400 s (the script: any `dedup.maxIds` and
 * `window`), `XCFGSET` clears every recorded id of the stream when its bounds change (two
 * producers configured differently would erase each other's record), and its record is per
 * producer id (a self-contained id must dedup across producers, so all would share one). Where
 * the bounds fit, it would replace the hash and list of stream-publish.lua with one XADD per event.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { detectIdempotentXadd } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const native = await detectIdempotentXadd(redis); // false on Redis 7.x, true on 8.6+
 * typeof native; // 'boolean'
 * redis.disconnect();
 * ```
 */
export async function detectIdempotentXadd(client: RedisLike): Promise<boolean> {
  let docs: unknown;
  try {
    docs = await client.call('COMMAND', 'DOCS', 'XADD');
  } catch {
    return false;
  }
  return mentions(docs, 'idmp');
}

// COMMAND DOCS answers nested arrays (RESP2) or maps (RESP3): an argument named `idmp` anywhere.
function mentions(value: unknown, word: string, depth = 0): boolean {
  if (depth > 12) return false;
  if (typeof value === 'string') return value.toLowerCase() === word;
  if (Array.isArray(value)) return value.some((v) => mentions(v, word, depth + 1));
  if (value instanceof Map) return [...value.entries()].some((e) => mentions(e, word, depth + 1));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).some((e) => mentions(e, word, depth + 1));
  return false;
}
