/**
 * `onceflow/fastify`: rate limits and the `Idempotency-Key` header for Fastify (docs/fastify.md).
 * `rateLimitPlugin` and `idempotencyPlugin` are plugins of onceflow's own (per-route policies in
 * `config.onceflow`); `rateLimitStore` is a store for @fastify/rate-limit. Fastify itself is the
 * application's (a peer): only its types are used. Re-exports only.
 *
 * @module
 */
export { type IdempotencyPluginOptions, idempotencyPlugin } from './idempotency-plugin.js';
export { type RateLimitPluginOptions, rateLimitPlugin } from './rate-limit-plugin.js';
export {
  type OnceflowRateLimitStore,
  type RateLimitStoreOptions,
  rateLimitStore,
} from './rate-limit-store.js';
export type { OnceflowRouteConfig, RouteIdempotency, RouteRateLimit } from './route-config.js';
