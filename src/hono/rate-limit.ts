// onceflow's rate limit as Hono middleware: one limiter decision per request (every limit of the
// limiter at once, all or nothing), the IETF RateLimit headers on the response, and a 429
// problem+json when refused. A per-route policy is one middleware per route.
import type { Context, MiddlewareHandler } from 'hono';
import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { HTTP_RATE_LIMIT_OPTIONS, type HttpRateLimitOptions, httpRateLimit } from '../http/rate-limit.js';
import { answerResponse, honoRequestInfo } from './request-info.js';

/** Options of {@link rateLimit}: src/http's, with `key` and `skip` of a Hono `Context`. */
export interface RateLimitOptions extends HttpRateLimitOptions<Context> {
  /**
   * The name of a request header that a proxy you trust sets to the client's address
   * (`x-forwarded-for`, `x-real-ip`, `cf-connecting-ip`): the subject when no `key` is given. Of
   * a list (`x-forwarded-for: client, proxy`) the last entry counts, the one your proxy appended.
   * Name a header only when every request passes that proxy: a client reaching the app directly
   * writes the header itself and picks its own subject. A request without the header is counted
   * under the subject `'unknown'`, shared by all such requests.
   */
  ipHeader?: string;
}

const OPTIONS: readonly string[] = [
  ...HTTP_RATE_LIMIT_OPTIONS,
  ...keysOf<Omit<RateLimitOptions, keyof HttpRateLimitOptions<Context>>>({ ipHeader: true }),
];

// An HTTP field name is a token (RFC 9110 §5.1).
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Rate-limit middleware for Hono: each request takes `cost` (default 1) from every limit of
 * `limiter` in one decision. A request that passes gets `RateLimit-Policy` and `RateLimit` on its
 * response; a refused one is answered 429 with an `application/problem+json` body and
 * `Retry-After`, and never reaches the handler. Hono has no portable client address, so either
 * `key` (the subject of a request: a user id, an API key, `getConnInfo(c).remote.address` on
 * @hono/node-server) or `ipHeader` (a trusted proxy's header) is required.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { rateLimit } from 'onceflow/hono';
 *
 * const clock = new FakeClock(0);
 * const limiter = createLimiter({
 *   store: memoryStore({ clock }),
 *   clock,
 *   limits: [
 *     { id: 'burst', algorithm: 'fixed-window', limit: 10, window: '1s' },
 *     { id: 'hour', algorithm: 'fixed-window', limit: 1000, window: '1h' },
 *   ],
 * });
 * const app = new Hono();
 * app.use('/api/*', rateLimit({ limiter, key: (c) => c.req.header('x-api-key') ?? 'anonymous' }));
 * app.get('/api/ping', (c) => c.text('pong'));
 * const res = await app.request('/api/ping', { headers: { 'x-api-key': 'k1' } });
 * res.headers.get('ratelimit'); // '"burst";r=9;t=1, "hour";r=999;t=3600'
 * (await app.request('/api/ping')).status; // 200
 * ```
 */
export function rateLimit(options: RateLimitOptions): MiddlewareHandler {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { limiter, key }', options);
  knownKeys('', options, OPTIONS);
  const { ipHeader, ...rest } = options;
  if (ipHeader !== undefined && (typeof ipHeader !== 'string' || !FIELD_NAME.test(ipHeader)))
    throw new InvalidOptionError('ipHeader', 'an HTTP header name', ipHeader);
  if (rest.key === undefined && ipHeader === undefined)
    throw new InvalidOptionError(
      'key',
      'a function of the request (Hono has no portable client address), or an `ipHeader` a trusted proxy sets',
      undefined,
    );
  const core = httpRateLimit<Context>(rest);
  return async (c, next) => {
    const verdict = await core.check(c, honoRequestInfo(c, ipHeader));
    if (!verdict.pass) return answerResponse(c, verdict.answer);
    await next();
    // After the handler: `c.header` then writes onto its response, whichever way it was made
    // (a prepared header is lost when a handler returns a `new Response` of its own).
    for (const [name, value] of Object.entries(verdict.headers)) c.header(name, value);
  };
}
