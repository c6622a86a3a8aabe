import { evalScript, type RedisLike } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';
import { redisStoreError } from '../redis/store-error.js';

/**
 * XINFO STREAM of `stream`, field by field; undefined when there is no such key. Read through a
 * script (stream-info.lua), whose KEYS a client's `keyPrefix` applies to: ioredis leaves XINFO's
 * key unprefixed, so a plain XINFO on such a client reads another key (or none). A failure is
 * `operation`'s StoreError (a read: nothing changed).
 */
export async function readStreamInfo(
  client: RedisLike,
  stream: string,
  operation: string,
): Promise<Map<string, unknown> | undefined> {
  let reply: unknown;
  try {
    reply = await evalScript(client, scripts.streamInfo, [stream], []);
  } catch (err) {
    throw redisStoreError(operation, err, false, 'read');
  }
  if (!Array.isArray(reply)) return undefined;
  const fields = new Map<string, unknown>();
  for (let i = 0; i + 1 < reply.length; i += 2) fields.set(String(reply[i]), reply[i + 1]);
  return fields;
}

/** The id of the stream's first entry in {@link readStreamInfo}'s fields; undefined when it has none. */
export function firstEntryId(fields: Map<string, unknown>): string | undefined {
  const first = fields.get('first-entry');
  return Array.isArray(first) ? String(first[0]) : undefined;
}
