// onceflow's rate-limit plugin for Fastify: one limiter decision per request (every limit of the
// limiter at once), the IETF RateLimit headers, and a 429 problem+json when refused.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import {
  HTTP_RATE_LIMIT_OPTIONS,
  type HttpRateLimit,
  type HttpRateLimitOptions,
  httpRateLimit,
} from '../http/rate-limit.js';
import { appendRouteHook, siblingPlugin, withoutRegisterOptions } from './plugin-meta.js';
import { requestInfo, sendAnswer } from './request-info.js';
import { routePolicy } from './route-config.js';

/**
 * Options of {@link rateLimitPlugin}: those of every onceflow adapter, plus `global`. A route's
 * `config: { onceflow: { rateLimit } }` replaces any of them for that route, or is `false`.
 */
export interface RateLimitPluginOptions extends Partial<HttpRateLimitOptions<FastifyRequest>> {
  /**
   * `true` (default): every route declared after the plugin (in its context and below) is
   * limited, with `limiter` required here. `false`: only routes whose config names a
   * `rateLimit` policy are.
   */
  global?: boolean;
}

const OPTIONS: readonly string[] = [
  ...HTTP_RATE_LIMIT_OPTIONS,
  ...keysOf<Omit<RateLimitPluginOptions, keyof HttpRateLimitOptions<FastifyRequest>>>({ global: true }),
];
const ROUTE_OPTIONS = OPTIONS.filter((k) => k !== 'global');

/**
 * Rate limits for Fastify routes, as a plugin: registered, it limits the routes declared after
 * it in the same context (it applies to its siblings, as a fastify-plugin plugin does), in an
 * `onRequest` hook (before the body is read: a refused request costs no parsing). A route's
 * `config: { onceflow: { rateLimit: { ... } } }` gives it its own options (another limiter, key
 * or cost), `rateLimit: false` exempts it. Each route's options are validated when it is
 * declared: a typo fails at startup, not on the first request.
 *
 * An allowed request carries `RateLimit-Policy` and `RateLimit`; a refused one is answered 429
 * with an `application/problem+json` body (type `…/docs/http.md#rate-limited`) and
 * `Retry-After`. A failing store gives a 500 through Fastify's error handler
 * (`onStoreError: 'pass'` lets the request through instead).
 *
 * @example
 * ```ts no-run
 * const app = Fastify();
 * await app.register(rateLimitPlugin, {
 *   limiter: createLimiter({ store, limits: [
 *     { id: 'burst', algorithm: 'gcra', limit: 10, window: '1s' },
 *     { id: 'hour', algorithm: 'sliding-window', limit: 1000, window: '1h', granularity: '1m' },
 *   ] }),
 *   key: (request) => String(request.headers['x-api-key'] ?? request.ip),
 * });
 * app.get('/health', { config: { onceflow: { rateLimit: false } } }, async () => 'ok');
 * ```
 */
export const rateLimitPlugin: FastifyPluginAsync<RateLimitPluginOptions> = siblingPlugin(
  'onceflow-rate-limit',
  async (app, raw) => {
    if (!isPlainObject(raw as unknown))
      throw new InvalidOptionError('options', 'an object like { limiter }', raw);
    const options = withoutRegisterOptions(raw) as RateLimitPluginOptions;
    knownKeys('', options, OPTIONS);
    const { global: globalOption, ...base } = options;
    if (globalOption !== undefined && typeof globalOption !== 'boolean')
      throw new InvalidOptionError('global', 'true or false', globalOption);
    const global = globalOption !== false;
    // Checked once here when every route uses it, so a bad option fails at registration.
    const shared = global ? httpRateLimit(base as HttpRateLimitOptions<FastifyRequest>) : undefined;

    app.addHook('onRoute', (route) => {
      const own = routePolicy(route as RouteOptions, 'rateLimit');
      if (own === false || (own === undefined && shared === undefined)) return;
      let check: HttpRateLimit<FastifyRequest>;
      if (own === undefined) check = shared as HttpRateLimit<FastifyRequest>;
      else {
        const where = `${route.method} ${route.url}: config.onceflow.rateLimit`;
        knownKeys(where, own, ROUTE_OPTIONS);
        if (own.limiter === undefined && base.limiter === undefined)
          throw new InvalidOptionError(
            `${where}.limiter`,
            'a limiter from createLimiter() (none here nor in the plugin)',
            undefined,
          );
        check = httpRateLimit({ ...base, ...own } as HttpRateLimitOptions<FastifyRequest>);
      }
      appendRouteHook(route as RouteOptions, 'onRequest', rateLimitHook(check));
    });
  },
);

function rateLimitHook(check: HttpRateLimit<FastifyRequest>) {
  return async function onceflowRateLimit(request: FastifyRequest, reply: FastifyReply) {
    const verdict = await check.check(request, requestInfo(request));
    if (!verdict.pass) return sendAnswer(reply, verdict.answer);
    for (const [name, value] of Object.entries(verdict.headers)) reply.header(name, value);
    return undefined;
  };
}
