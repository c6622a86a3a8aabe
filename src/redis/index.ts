// onceflow/redis: the store on Redis and Redis Cluster. Re-exports only.
export type { RedisLike } from './eval.js';
export { escapeId } from './keys.js';
export { createRedisStore, type RedisStoreOptions } from './redis-store.js';
export { type LuaScript, scripts } from './scripts.generated.js';
