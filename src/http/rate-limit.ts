// The framework-neutral rate limit of an HTTP request: one limiter decision (every limit of the
// limiter at once, all or nothing), the IETF RateLimit headers, and a 429 problem when refused.
// onceflow/express, onceflow/fastify and onceflow/hono wrap it in their framework's shape.
import { InvalidOptionError, isOnceflowError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { rateLimitHeaders } from '../limiter/headers.js';
import type { Limiter } from '../limiter/types.js';
import type { Decision } from '../windows/limits/decision.js';
import { DEFAULT_IPV6_SUBNET, ipSubject } from './ip.js';
import { problem } from './problem.js';
import type { HttpAnswer, HttpRequestInfo } from './request.js';

/** A limiter's subject: one key, or one per limit's `by` (`{ user, ip }`). */
export type RateLimitSubject = string | Readonly<Record<string, string>>;

/** Options of the rate-limit middleware of every adapter (`R`: the framework's request). */
export interface HttpRateLimitOptions<R> {
  /** The limiter whose limits decide each request (`createLimiter({ store, limits: [...] })`). */
  limiter: Limiter;
  /**
   * The request's subject. Default: the client's IP as the framework reports it, an IPv6 one cut
   * to its `/ipv6Subnet` network. Behind a proxy, tell the framework which hops to trust (a hop
   * count or the proxy's addresses, never "trust everything": the leftmost `X-Forwarded-For`
   * entry is whatever the client wrote), or every client is the proxy.
   */
  key?: (request: R) => RateLimitSubject | Promise<RateLimitSubject>;
  /**
   * With the default key, how many leading bits of an IPv6 address name a client (default 56:
   * one client usually holds a whole /64 or more and can rotate through it). `false`: the whole
   * address. 1-128.
   */
  ipv6Subnet?: number | false;
  /** Requests for which no limit applies (health checks, an allow-list): not counted. */
  skip?: (request: R) => boolean | Promise<boolean>;
  /** The cost of a request (default 1): an export endpoint may cost 10. */
  cost?: (request: R) => number;
  /** Send `RateLimit-Policy`, `RateLimit` and, on a refusal, `Retry-After`. Default true. */
  headers?: boolean;
  /**
   * When the limiter's store fails (and its `degraded` policy is `'throw'`): `'fail'` (default)
   * passes the error to the framework (a 500); `'pass'` lets the request through, unlimited, as
   * express-rate-limit's `passOnStoreError`. Choose `degraded` on the limiter for finer answers.
   */
  onStoreError?: 'fail' | 'pass';
}

/** Every option of the core: an adapter's own list is these plus its own (see the adapters). */
export const HTTP_RATE_LIMIT_OPTIONS = keysOf<HttpRateLimitOptions<unknown>>({
  limiter: true,
  key: true,
  skip: true,
  cost: true,
  headers: true,
  onStoreError: true,
  ipv6Subnet: true,
});

/** What a request's check came to: go on (with headers to send), or answer with a 429. */
export type RateLimitVerdict =
  | { readonly pass: true; readonly headers: Readonly<Record<string, string>>; readonly decision?: Decision }
  | { readonly pass: false; readonly answer: HttpAnswer; readonly decision: Decision };

/** A validated rate limit: `check` decides one request. */
export interface HttpRateLimit<R> {
  check(request: R, info: HttpRequestInfo): Promise<RateLimitVerdict>;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** Validates the options (a typed error naming a bad one) and returns the checker. */
export function httpRateLimit<R>(options: HttpRateLimitOptions<R>): HttpRateLimit<R> {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { limiter }', options);
  knownKeys('', options, HTTP_RATE_LIMIT_OPTIONS);
  const limiter = options.limiter;
  if (typeof (limiter as Partial<Limiter> | undefined)?.take !== 'function')
    throw new InvalidOptionError('limiter', 'a limiter from createLimiter()', limiter);
  for (const fn of ['key', 'skip', 'cost'] as const) {
    if (options[fn] !== undefined && typeof options[fn] !== 'function')
      throw new InvalidOptionError(fn, 'a function of the request', options[fn]);
  }
  if (options.headers !== undefined && typeof options.headers !== 'boolean')
    throw new InvalidOptionError('headers', 'true or false', options.headers);
  const onStoreError = options.onStoreError ?? 'fail';
  if (onStoreError !== 'fail' && onStoreError !== 'pass')
    throw new InvalidOptionError('onStoreError', "'fail' or 'pass'", onStoreError);
  const subnet = options.ipv6Subnet ?? DEFAULT_IPV6_SUBNET;
  if (subnet !== false && !(Number.isInteger(subnet) && subnet >= 1 && subnet <= 128))
    throw new InvalidOptionError('ipv6Subnet', 'an integer from 1 to 128, or false', options.ipv6Subnet);
  const { key, skip, cost } = options;
  const sendHeaders = options.headers !== false;

  return {
    async check(request, info) {
      if (skip !== undefined && (await skip(request))) return { pass: true, headers: NO_HEADERS };
      const subject = key === undefined ? ipSubject(info.ip ?? 'unknown', subnet) : await key(request);
      let decision: Decision;
      try {
        decision = await limiter.take(subject, cost === undefined ? undefined : { cost: cost(request) });
      } catch (err) {
        if (onStoreError === 'pass' && isOnceflowError(err, 'ERR_STORE'))
          return { pass: true, headers: NO_HEADERS };
        throw err;
      }
      const headers = sendHeaders ? rateLimitHeaders(decision) : NO_HEADERS;
      if (decision.allowed) return { pass: true, headers, decision };
      const retryAfter = Number.isFinite(decision.retryAfterMs)
        ? Math.ceil(decision.retryAfterMs / 1000)
        : undefined;
      const detail =
        retryAfter === undefined
          ? 'This request costs more than the limit admits; it can never pass.'
          : `Too many requests; retry after ${retryAfter} s.`;
      return {
        pass: false,
        decision,
        answer: problem('rate-limited', 429, detail, headers, retryAfter === undefined ? {} : { retryAfter }),
      };
    },
  };
}
