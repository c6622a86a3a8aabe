/**
 * `onceflow/hono`: rate limits and the `Idempotency-Key` header as Hono middleware (docs/hono.md),
 * on Node through @hono/node-server and on every Web-standard runtime: nothing here uses a Node
 * builtin. Re-exports only.
 *
 * @module
 */
export { type IdempotencyKeyOptions, idempotencyKey } from './idempotency-key.js';
export { type RateLimitOptions, rateLimit } from './rate-limit.js';
