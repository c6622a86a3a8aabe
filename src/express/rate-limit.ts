// onceflow's own rate-limit middleware for Express: the framework-neutral check of
// src/http/rate-limit.ts (one limiter decision over every limit, IETF RateLimit headers, a 429
// problem), sent the Express way.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { InvalidOptionError } from '../core/errors.js';
import { type HttpRateLimitOptions, httpRateLimit } from '../http/rate-limit.js';
import type { HttpAnswer } from '../http/request.js';
import { requestInfo } from './request-info.js';

/** Options of {@link rateLimit}: those of every onceflow adapter, with Express's request. */
export type RateLimitOptions = HttpRateLimitOptions<Request>;

/**
 * An Express middleware that decides each request with `options.limiter` (all of its limits in
 * one take: admitted by every one and charged in every one, or refused and charged nowhere). An
 * admitted request gets `RateLimit-Policy` and `RateLimit` and goes on; a refused one is answered
 * 429 with an `application/problem+json` body, those headers and `Retry-After`.
 *
 * Options are validated here, once (an unknown key or a bad value: a typed error naming it).
 * A per-route policy is one middleware per route, each with its own limiter (its own `name`, so
 * their counters never meet): `app.post('/login', rateLimit({ limiter: loginLimiter }), ...)`.
 * A store failure goes to `next(err)` (Express's error handler: a 500) unless `onStoreError` is
 * `'pass'`. Counting by address (no `key`) under `app.set('trust proxy', true)` is refused on every
 * request (`next(err)`, an `InvalidOptionError`): Express then takes the leftmost
 * `X-Forwarded-For` entry, which every client writes itself, so each could pick its own counter.
 */
export function rateLimit(options: RateLimitOptions): RequestHandler {
  const core = httpRateLimit(options);
  const byIp = options.key === undefined;
  return (req: Request, res: Response, next: NextFunction): void => {
    if (byIp && req.app?.get('trust proxy') === true) {
      next(permissiveTrustProxy());
      return;
    }
    core.check(req, requestInfo(req)).then((verdict) => {
      if (verdict.pass) {
        for (const name in verdict.headers) res.setHeader(name, verdict.headers[name] as string);
        next();
      } else sendAnswer(res, verdict.answer);
    }, next);
  };
}

/** Sends one of the HTTP parts' own answers (a 429, 409, 422 or 400 problem). */
export function sendAnswer(res: Response, answer: HttpAnswer): void {
  res.status(answer.status);
  for (const name in answer.headers) res.setHeader(name, answer.headers[name] as string);
  res.end(answer.body);
}

// `trust proxy` true trusts every hop: req.ip is whatever the client put first in X-Forwarded-For.
function permissiveTrustProxy(): InvalidOptionError {
  return new InvalidOptionError(
    "app setting 'trust proxy'",
    "the number of proxies in front (app.set('trust proxy', 1)) or their addresses, not true, when rateLimit counts by address (every client could name its own address in X-Forwarded-For); or give rateLimit a `key`",
    true,
  );
}
