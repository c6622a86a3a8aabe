import type { LuaScript } from './scripts.generated.js';

/**
 * The one thing onceflow needs from a Redis client: send a command, get the reply. ioredis's
 * `Redis` and `Cluster` both have it (`client.call(...)`), and the cluster client routes a
 * script call by its first key. Typed structurally so ioredis stays an optional peer dependency.
 */
export interface RedisLike {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
}

/**
 * Runs a script: EVALSHA first, EVAL when the server answers NOSCRIPT (after a restart, a
 * failover or a SCRIPT FLUSH). Never inside MULTI: a NOSCRIPT there would abort the whole block.
 */
export async function evalScript(
  client: RedisLike,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  const ok = script.batched
    ? keys.length > 0 && keys.length % script.numberOfKeys === 0
    : keys.length === script.numberOfKeys;
  if (!ok)
    throw new Error(
      `${script.name} takes ${script.numberOfKeys} keys${script.batched ? ' per entry' : ''}, got ${keys.length}`,
    );
  try {
    return await client.call('EVALSHA', script.sha1, keys.length, ...keys, ...args);
  } catch (err) {
    if (!isNoScript(err)) throw err;
    // EVAL also caches the script, so the next call's EVALSHA succeeds again.
    return client.call('EVAL', script.text, keys.length, ...keys, ...args);
  }
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}
