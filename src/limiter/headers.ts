import { InvalidArgumentError } from '../core/errors.js';
import { isPlainObject } from '../core/validate.js';
import type { Decision, LimitDecision } from '../windows/limits/decision.js';

/**
 * HTTP headers for one or more decisions, in the IETF RateLimit fields form
 * (draft-ietf-httpapi-ratelimit-headers-09, the form express-rate-limit calls `draft-8`):
 *
 *   RateLimit-Policy: "<id>";q=<limit>;w=<window s>      one item per limit
 *   RateLimit:        "<id>";r=<remaining>;t=<reset s>   one item per limit
 *   Retry-After:      <s>                                only when a decision refused
 *
 * Seconds are rounded up: a client that waits `t` or `Retry-After` seconds never comes back
 * early. A limit that appears in several decisions is listed once (its binding state). A refusal
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
  const list: readonly unknown[] = Array.isArray(decisions) ? decisions : [decisions];
  for (const [i, d] of list.entries()) {
    if (!isPlainObject(d) || !Array.isArray(d.limits) || typeof d.at !== 'number') {
      throw new InvalidArgumentError(`decisions[${i}]`, 'a decision from take()', d);
    }
    for (const [j, part] of (d.limits as unknown[]).entries()) {
      const p = part as Partial<LimitDecision> | null;
      if (
        !isPlainObject(p) ||
        typeof p.id !== 'string' ||
        typeof p.limit !== 'number' ||
        typeof p.windowMs !== 'number' ||
        typeof p.remaining !== 'number' ||
        typeof p.resetAt !== 'number'
      ) {
        throw new InvalidArgumentError(
          `decisions[${i}].limits[${j}]`,
          "a limit's part of a decision from take()",
          part,
        );
      }
    }
  }
  // Per limit id: the binding state when several decisions list it (the least remaining, then the
  // latest reset), so a refusal is never reported next to a roomier state of the same id.
  const policies = new Map<string, string>();
  const states = new Map<string, { r: number; t: number }>();
  let retry = -1;
  for (const d of list as readonly Decision[]) {
    for (const part of d.limits) {
      const name = sfString(part.id);
      const policy = `${name};q=${part.limit};w=${Math.ceil(part.windowMs / 1000)}`;
      // Never above the quota it is read against: a GCRA burst larger than the limit can leave
      // more than `limit` admissible at once, which `q` cannot say; reporting `q` is the safe side.
      const r = Math.min(part.limit, Math.max(0, part.remaining));
      const t = Math.max(0, Math.ceil((part.resetAt - d.at) / 1000));
      const seen = states.get(name);
      if (seen === undefined || r < seen.r || (r === seen.r && t > seen.t)) {
        // The policy of the part whose state is reported: one id used by two limits (another
        // limit or window) must not show one's quota next to the other's remaining.
        states.set(name, { r, t });
        policies.set(name, policy);
      }
    }
    if (!d.allowed && Number.isFinite(d.retryAfterMs))
      retry = Math.max(retry, Math.ceil(d.retryAfterMs / 1000));
  }
  // An empty list field is left out rather than sent empty.
  const headers: Record<string, string> = {};
  if (policies.size > 0) {
    headers['RateLimit-Policy'] = [...policies.values()].join(', ');
    headers.RateLimit = [...states].map(([name, { r, t }]) => `${name};r=${r};t=${t}`).join(', ');
  }
  if (retry >= 0) headers['Retry-After'] = String(retry);
  return headers;
}

/**
 * An RFC 8941 sf-string: printable ASCII, with `"` and `\\` escaped. Other characters (and `%`)
 * are percent-encoded as UTF-8, so two different ids never render as the same string.
 */
// TextEncoder, not Buffer: these headers are built in Web-standard runtimes too (onceflow/hono).
const UTF8 = new TextEncoder();

function sfString(text: string): string {
  const ascii = text.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) =>
    [...UTF8.encode(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
  return `"${ascii.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}
