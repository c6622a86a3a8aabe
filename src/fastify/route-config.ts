// The per-route policy of onceflow's Fastify plugins: `config: { onceflow: { rateLimit, idempotency } }`
// on a route, as @fastify/rate-limit reads `config: { rateLimit }` (a key of our own, so both
// plugins can sit in one application).
import type { FastifyRequest, RouteOptions } from 'fastify';
import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import type { HttpIdempotencyOptions } from '../http/idempotency-key.js';
import type { HttpRateLimitOptions } from '../http/rate-limit.js';

/** A route's rate limit: options that replace the plugin's for this route, or `false`: none. */
export type RouteRateLimit = false | Partial<HttpRateLimitOptions<FastifyRequest>>;
/** A route's Idempotency-Key policy: options that replace the plugin's for this route, or `false`: none. */
export type RouteIdempotency = false | Partial<HttpIdempotencyOptions<FastifyRequest>>;

/** What a route's `config.onceflow` holds. */
export interface OnceflowRouteConfig {
  rateLimit?: RouteRateLimit;
  idempotency?: RouteIdempotency;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** onceflow's per-route policy (see onceflow/fastify). */
    onceflow?: OnceflowRouteConfig;
  }
}

const CONFIG = keysOf<OnceflowRouteConfig>({ rateLimit: true, idempotency: true });

/**
 * The route's own policy for `part`: `undefined` (none given: the plugin's applies), `false`, or
 * the options to merge over the plugin's. A malformed one is refused when the route is declared.
 */
export function routePolicy<K extends keyof OnceflowRouteConfig>(
  route: RouteOptions,
  part: K,
): OnceflowRouteConfig[K] | undefined {
  const config = (route.config as { onceflow?: unknown } | undefined)?.onceflow;
  if (config === undefined) return undefined;
  const where = `${route.method} ${route.url}: config.onceflow`;
  if (!isPlainObject(config))
    throw new InvalidOptionError(where, 'an object like { rateLimit, idempotency }', config);
  knownKeys(where, config, CONFIG);
  const own = config[part];
  if (own !== undefined && own !== false && !isPlainObject(own))
    throw new InvalidOptionError(`${where}.${part}`, 'false or an options object', own);
  return own as OnceflowRouteConfig[K];
}
