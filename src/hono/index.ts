// onceflow/hono: rate limits and Idempotency-Key as Hono middleware (Node via @hono/node-server,
// and every Web-standard runtime: nothing here uses a Node builtin).
export { type IdempotencyKeyOptions, idempotencyKey } from './idempotency-key.js';
export { type RateLimitOptions, rateLimit } from './rate-limit.js';
