/**
 * `onceflow/express`: rate limits and the `Idempotency-Key` header for Express (docs/express.md).
 * `rateLimit` and `idempotencyKey` are middleware of onceflow's own; `OnceflowStore` is a store
 * for express-rate-limit. Express itself is the application's (a peer): only its types are used.
 *
 * @module
 */
export { type IdempotencyKeyOptions, idempotencyKey } from './idempotency-key.js';
export { type RateLimitOptions, rateLimit } from './rate-limit.js';
export {
  type ClientRateLimitInfo,
  createExpressRateLimitStore,
  OnceflowStore,
  type OnceflowStoreOptions,
} from './rate-limit-store.js';
