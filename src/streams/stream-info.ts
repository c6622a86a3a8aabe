import { evalScript, type RedisLike } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';

/**
 * XINFO STREAM of `stream`, field by field; undefined when there is no such key. Read through a
 * script (stream-info.lua), whose KEYS a client's `keyPrefix` applies to: ioredis leaves XINFO's
 * key unprefixed, so a plain XINFO on such a client reads another key (or none).
 */
export async function readStreamInfo(
  client: RedisLike,
  stream: string,
): Promise<Map<string, unknown> | undefined> {
  const reply = await evalScript(client, scripts.streamInfo, [stream], []);
  if (!Array.isArray(reply)) return undefined;
  const fields = new Map<string, unknown>();
  for (let i = 0; i + 1 < reply.length; i += 2) fields.set(String(reply[i]), reply[i + 1]);
  return fields;
}
