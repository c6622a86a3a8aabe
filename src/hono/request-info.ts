// What onceflow's framework-neutral HTTP parts read of a Hono request, and how their answers
// (429, 400, 409, 422) become Hono responses.
import type { Context } from 'hono';
import type { HttpAnswer, HttpRequestInfo } from '../http/request.js';

/**
 * The request as src/http sees it. `ip` comes from `ipHeader` only (a header a trusted proxy
 * sets): Hono has no portable client address, and a header the client itself sends proves nothing.
 */
export function honoRequestInfo(c: Context, ipHeader: string | undefined): HttpRequestInfo {
  const url = new URL(c.req.url);
  return {
    method: c.req.method.toUpperCase(),
    url: url.pathname + url.search,
    ip: ipHeader === undefined ? undefined : clientIp(c.req.header(ipHeader)),
    header: (name) => c.req.header(name) ?? undefined,
  };
}

/**
 * The client's address in a proxy's header: its last entry. A proxy appends the address it saw
 * to `X-Forwarded-For` (`client, proxy1, ...`): everything left of its own entry is whatever the
 * client sent, so only the rightmost one is the trusted proxy's word.
 */
function clientIp(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const last = value.slice(value.lastIndexOf(',') + 1).trim();
  return last.length === 0 ? undefined : last;
}

/** An answer of the HTTP parts as the response, with the headers earlier middleware prepared (CORS). */
export function answerResponse(c: Context, answer: HttpAnswer): Response {
  // The status is one of 400, 409, 413, 422, 429: all have a body.
  return c.body(answer.body, answer.status as 400, answer.headers);
}
