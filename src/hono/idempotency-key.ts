// The Idempotency-Key middleware for Hono, on src/http's core: the first request with a key runs
// and its response (status, the headers that matter, the body bytes) is recorded; a repeat gets
// that response again, byte for byte, with `idempotent-replayed: true`; a repeat while the first
// still runs gets 409, the same key with another request 422, a missing key 400 when required.
import type { Context, MiddlewareHandler } from 'hono';
import type { StatusCode } from 'hono/utils/http-status';
import { InvalidOptionError } from '../core/errors.js';
import { LIMITS } from '../core/limits.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import {
  HTTP_IDEMPOTENCY_OPTIONS,
  type HttpIdempotencyOptions,
  httpIdempotency,
  IDEMPOTENCY_KEY_HEADER,
  REPLAYED_HEADER,
} from '../http/idempotency-key.js';
import { problem } from '../http/problem.js';
import type { RecordedResponse } from '../http/request.js';
import { digest, fromBase64, readBounded } from './bytes.js';
import { relay } from './relay.js';
import { answerResponse, honoRequestInfo } from './request-info.js';

/** Options of {@link idempotencyKey}: src/http's, with `scope` and `fingerprint` of a Hono `Context`. */
export interface IdempotencyKeyOptions extends HttpIdempotencyOptions<Context> {
  /**
   * The largest request body read for the default fingerprint (it is read from a copy: the
   * handler still reads the body as usual). A larger one is answered 413 and does not run.
   * Default and most: `LIMITS.payloadBytes` (1 MiB), bytes held in memory per request while it
   * is digested. Not read when `fingerprint` is given.
   */
  maxRequestBytes?: number;
  /**
   * The largest response body copied for the record (copied as the handler writes it: a stream
   * reaches the client as written, a body already in memory once recorded). A larger one, a streamed one (`text/event-stream`, `Transfer-Encoding: chunked`
   * as Hono's streaming helpers set) or one the client stops reading is recorded as its status
   * and headers only: a retry is replayed those, with `idempotent-body: omitted`, and the handler
   * never runs twice. Default 3/4 of the idempotency's `maxResultBytes` (the record keeps the body
   * as base64, 4/3 of its bytes: 48 KiB for the default 64 KiB), most 64 MiB.
   */
  maxResponseBytes?: number;
}

const OPTIONS: readonly string[] = [
  ...HTTP_IDEMPOTENCY_OPTIONS,
  ...keysOf<Omit<IdempotencyKeyOptions, keyof HttpIdempotencyOptions<Context>>>({
    maxRequestBytes: true,
    maxResponseBytes: true,
  }),
];

// 64 MiB: while recorded, a response is held as its bytes, a binary string of them and their
// base64 (4/3): ~3.3x its size, ~220 MB per request at this bound. A larger API response belongs in
// object storage, with its id recorded instead.
const MAX_RESPONSE_BYTES = 67_108_864;

/**
 * `Idempotency-Key` middleware for Hono (draft-ietf-httpapi-idempotency-key-header), on a
 * `createIdempotency` of any onceflow store. Requests of `methods` (default POST and PATCH) with
 * the header run once per key: the first one's response is recorded (below 500 by default) and a
 * repeat is answered with it again, byte for byte, plus `idempotent-replayed: true`. A repeat
 * while the first runs is answered 409, the same key with another method, URL or body 422, a
 * missing key 400 when `required`. A handler that throws releases the key (a retry runs again).
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { idempotencyKey } from 'onceflow/hono';
 *
 * const app = new Hono();
 * let orders = 0;
 * app.post('/orders', idempotencyKey({ idempotency: createIdempotency({ name: 'orders' }) }), async (c) =>
 *   c.json({ order: ++orders, item: (await c.req.json()).item }, 201),
 * );
 * const send = () =>
 *   app.request('/orders', { method: 'POST', headers: { 'idempotency-key': 'k1' }, body: '{"item":"tea"}' });
 * await (await send()).json(); // { order: 1, item: 'tea' }
 * const again = await send();
 * await again.json(); // { order: 1, item: 'tea' }
 * again.headers.get('idempotent-replayed'); // 'true'
 * ```
 */
export function idempotencyKey(options: IdempotencyKeyOptions): MiddlewareHandler {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { idempotency }', options);
  knownKeys('', options, OPTIONS);
  const { maxRequestBytes, maxResponseBytes, ...rest } = options;
  const core = httpIdempotency<Context>(rest);
  const requestBound = byteBound(
    'maxRequestBytes',
    maxRequestBytes,
    LIMITS.payloadBytes,
    LIMITS.payloadBytes,
  );
  const responseBound = byteBound(
    'maxResponseBytes',
    maxResponseBytes,
    defaultResponseBound(rest.idempotency.maxResultBytes),
    MAX_RESPONSE_BYTES,
  );
  const readsBody = rest.fingerprint === undefined;

  // The core's own check, made first here so that a request it passes (another method, no key)
  // is never read: the core validated these names.
  const methods = new Set((rest.methods ?? ['POST', 'PATCH']).map((m) => m.toUpperCase()));

  return async (c, next) => {
    let body: string | undefined;
    // Only a request the core decides on is fingerprinted: without a key it passes or is refused (400).
    if (
      readsBody &&
      methods.has(c.req.method.toUpperCase()) &&
      c.req.header(IDEMPOTENCY_KEY_HEADER) !== undefined
    ) {
      const bytes = await requestBytes(c, requestBound);
      if (bytes === undefined) return tooLarge(c, requestBound);
      body = await digest(bytes);
    }
    // Set once the handler's response is on its way while its body is still copied: this
    // middleware returns then, so the client gets the body as it is written.
    let sending!: (relayed: undefined) => void;
    const relayed = new Promise<undefined>((resolve) => {
      sending = resolve;
    });
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const handled = core.handle(c, honoRequestInfo(c, undefined), body, async () => {
      const errorBefore = c.error;
      await next();
      // Hono answers a handler's throw with its error handler's response and sets `c.error`:
      // such a response is sent but never recorded (the key is released, a retry runs again).
      if (c.error !== undefined && c.error !== errorBefore) return undefined;
      const r = relay(c.res, responseBound, settled);
      if (r.relayed) {
        // Replaced, not merged: the relay already carries every header of the response.
        c.res = undefined;
        c.res = r.response;
        // A body already in memory (`c.json`, `c.text`) is copied to its end within microtasks,
        // before any timer fires: its response is then sent once recorded, as a body the client
        // may never read must be (a retry gets the replay, never 409). A body still being
        // written when the timer fires (a stream) is sent now, as it is written.
        const timer = setTimeout(() => sending(undefined), 0);
        const stop = () => clearTimeout(timer);
        r.recorded.then(stop, stop);
      }
      return r.recorded;
    });
    handled.then(settle, settle);
    const verdict = await Promise.race([handled, relayed]);
    if (verdict === undefined) {
      // The record completes as the client reads the body; its failures are the core's to report,
      // and a failing body stream reaches the client as the aborted response.
      handled.catch(() => {});
      return;
    }
    switch (verdict.kind) {
      case 'pass':
        await next();
        return;
      case 'executed':
        return; // c.res is the handler's response, sent as it is
      case 'replay':
        return replayResponse(c, verdict.response);
      case 'answer':
        return answerResponse(c, verdict.answer);
    }
  };
}

function byteBound(name: string, value: number | undefined, byDefault: number, most: number): number {
  const bound = value ?? byDefault;
  if (!Number.isSafeInteger(bound) || bound < 0 || bound > most)
    throw new InvalidOptionError(name, `an integer of bytes from 0 to ${most}`, value);
  return bound;
}

/**
 * The most body bytes a record of `maxResultBytes` can keep: it holds them base64 (4 characters per
 * 3 bytes), so a larger body is always kept body-less and copying it would be waste. An
 * idempotency of the user's own without the figure gets LIMITS.payloadBytes.
 */
function defaultResponseBound(maxResultBytes: unknown): number {
  if (typeof maxResultBytes !== 'number' || !Number.isFinite(maxResultBytes) || maxResultBytes < 0)
    return LIMITS.payloadBytes;
  return Math.min(MAX_RESPONSE_BYTES, Math.floor((maxResultBytes * 3) / 4));
}

/**
 * The body bytes, read from a copy so the handler reads the request as if nothing had. When
 * middleware before this one already read it through Hono (`c.req.json()`, a validator), it is
 * taken from Hono's cache of it (a parsed JSON body as `JSON.stringify` writes it again).
 */
async function requestBytes(c: Context, bound: number): Promise<Uint8Array | undefined> {
  const declared = Number(c.req.header('content-length'));
  if (Number.isFinite(declared) && declared > bound) return undefined;
  const raw = c.req.raw;
  if (raw.bodyUsed) {
    // Already in memory: the bound only decides whether it is digested.
    const cached = new Uint8Array(await c.req.arrayBuffer());
    return cached.byteLength > bound ? undefined : cached;
  }
  if (raw.body === null) return new Uint8Array(0);
  return readBounded(raw.clone().body, bound);
}

/** The recorded response again, plus the headers earlier middleware prepared (CORS), as any response gets. */
function replayResponse(c: Context, recorded: RecordedResponse): Response {
  const headers = new Headers();
  for (const [name, value] of recorded.headers) headers.append(name, value);
  headers.set(REPLAYED_HEADER, 'true');
  // 204, 205 and 304 have no body: a Response with one (even empty) throws.
  const body = NULL_BODY.has(recorded.status) ? null : fromBase64(recorded.body);
  return c.newResponse(body, { status: recorded.status as StatusCode, headers });
}

const NULL_BODY = new Set([101, 204, 205, 304]);

function tooLarge(c: Context, bound: number): Response {
  const a = problem(
    'idempotent-request-too-large',
    413,
    `An idempotent request's body is at most ${bound} bytes here.`,
  );
  return c.body(a.body, 413, a.headers);
}
