import type { Decision } from './decision.js';

/**
 * HTTP headers for one or more decisions, in the IETF RateLimit fields form
 * (draft-ietf-httpapi-ratelimit-headers-09, the form express-rate-limit calls `draft-8`):
 *
 *   RateLimit-Policy: "<id>";q=<limit>;w=<window s>      one item per limit
 *   RateLimit:        "<id>";r=<remaining>;t=<reset s>   one item per limit
 *   Retry-After:      <s>                                only when a decision refused
 *
 * Seconds are rounded up: a client that waits `t` or `Retry-After` seconds never comes back
 * early. A limit that appears in several decisions is listed once (its last state). A refusal
 * that can never pass (`retryAfterMs` Infinity) sends no `Retry-After`.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(0);
 * const limiter = createLimiter({ store: memoryStore({ clock }), clock, algorithm: 'fixed-window', limit: 2, window: '1m', id: 'api' });
 * await limiter.take('u1');
 * await limiter.take('u1');
 * rateLimitHeaders(await limiter.take('u1')); // { 'RateLimit-Policy': '"api";q=2;w=60', RateLimit: '"api";r=0;t=60', 'Retry-After': '60' }
 * ```
 */
export function rateLimitHeaders(decisions: Decision | readonly Decision[]): Record<string, string> {
  const list: readonly Decision[] = Array.isArray(decisions) ? decisions : [decisions as Decision];
  const policies = new Map<string, string>();
  const states = new Map<string, string>();
  let retry = -1;
  for (const d of list) {
    for (const part of d.limits) {
      const name = sfString(part.id);
      policies.set(name, `${name};q=${part.limit};w=${Math.ceil(part.windowMs / 1000)}`);
      states.set(
        name,
        `${name};r=${Math.max(0, part.remaining)};t=${Math.max(0, Math.ceil((part.resetAt - d.at) / 1000))}`,
      );
    }
    if (!d.allowed && Number.isFinite(d.retryAfterMs))
      retry = Math.max(retry, Math.ceil(d.retryAfterMs / 1000));
  }
  const headers: Record<string, string> = {
    'RateLimit-Policy': [...policies.values()].join(', '),
    RateLimit: [...states.values()].join(', '),
  };
  if (retry >= 0) headers['Retry-After'] = String(retry);
  return headers;
}

/** An RFC 8941 sf-string: printable ASCII, with `"` and `\` escaped. */
function sfString(text: string): string {
  return `"${text.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, (c) => `\\${c}`)}"`;
}
