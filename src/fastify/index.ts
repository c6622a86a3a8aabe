// onceflow/fastify: onceflow's rate-limit and Idempotency-Key plugins for Fastify, and a store for
// @fastify/rate-limit. Re-exports only.
export { type IdempotencyPluginOptions, idempotencyPlugin } from './idempotency-plugin.js';
export { type RateLimitPluginOptions, rateLimitPlugin } from './rate-limit-plugin.js';
export {
  type OnceflowRateLimitStore,
  type RateLimitStoreOptions,
  rateLimitStore,
} from './rate-limit-store.js';
export type { OnceflowRouteConfig, RouteIdempotency, RouteRateLimit } from './route-config.js';
