/**
 * `onceflow/redis`: the store on Redis and Redis Cluster (every operation one Lua script), for
 * the caller's ioredis client; the replication check of its durability option; and the Lua
 * scripts it runs, to preload them. Re-exports only (and `scripts` under the doc comment the
 * generated module cannot carry: its text is rewritten by scripts/gen-lua.mjs).
 *
 * @module
 */
import { scripts as generated } from './scripts.generated.js';

export {
  type DurabilityOptions,
  NotReplicatedError,
  type ReplicationShortfall,
} from './durability.js';
export type { RedisLike } from './eval.js';
export { escapeId } from './keys.js';
export { createRedisStore, type RedisStoreOptions } from './redis-store.js';
export type { LuaScript } from './scripts.generated.js';

/**
 * The Lua scripts the Redis store runs, each with its text, SHA-1 and key count: to preload them
 * (`SCRIPT LOAD` on a new primary before traffic moves to it) or to see what a server has cached.
 * The store needs none of this: it sends EVALSHA, and EVAL when the server answers NOSCRIPT.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { scripts } from 'onceflow/redis';
 * const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * for (const script of Object.values(scripts)) await client.script('LOAD', script.text);
 * await client.script('EXISTS', scripts.ledgerApply.sha1, scripts.limiterTake.sha1); // [1, 1]
 * scripts.limiterTake.name; // 'limiter-take'
 * await client.quit();
 * ```
 */
export const scripts: typeof generated = generated;
