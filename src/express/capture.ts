// Captures the response an Express handler writes, for the Idempotency-Key middleware to record:
// its status, the headers worth replaying (recordedHeader, less content-encoding) and its body
// bytes. The handler's writes go out as they come; only its final `end` is held until the record
// is stored, so a client that has seen the whole response and retries gets the replay, never a 409.
import type { OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';
import type { Request, Response } from 'express';
import { headersByName, REPLAYED_HEADER, recordedHeader } from '../http/idempotency-key.js';
import type { RecordedResponse } from '../http/request.js';

/** One response being captured. */
export interface Capture {
  /**
   * Resolves once the handler ends the response (its body `omitted` when over the copy bound);
   * rejects with the error when the request failed (a throw or `next(err)` before that end).
   */
  readonly response: Promise<RecordedResponse | undefined>;
  /** Lets the held `end` through (after the record is stored or given up); idempotent. */
  release(): void;
}

// Express's router (router >= 2.3) remembers, on the request, every error passed to its `next`
// (a throw, a rejection, `next(err)`), under this registered symbol. Every handler after this
// middleware is called with the router's own `next`, never with the one this middleware was
// given, so wrapping that would see none of them: this set is where they can be seen.
const ROUTER_ERRORS = Symbol.for('router.tracing.publishedErrors');

const errorsOf = (req: Request): ReadonlySet<unknown> | undefined =>
  (req as unknown as Record<symbol, ReadonlySet<unknown> | undefined>)[ROUTER_ERRORS];

/**
 * Wraps `res.writeHead`, `res.write` and `res.end`. A body over `maxBodyBytes` is sent as it is
 * and recorded without its body (`omitted`: the copy stops growing there). A client that goes
 * away does not end the capture: the handler still runs, and its response is recorded when it
 * ends (then not sent: nobody is there). Once the end is held, the response reads as sent and
 * ended (`headersSent`, `writableEnded`) and any later write is dropped, so an error handler or
 * a timeout that runs meanwhile cannot send another response than the one recorded.
 */
export function captureResponse(req: Request, res: Response, maxBodyBytes: number): Capture {
  const chunks: Buffer[] = [];
  let size = 0;
  let oversized = false;
  let settle: (r: RecordedResponse | undefined) => void = () => {};
  let fail: (err: unknown) => void = () => {};
  const response = new Promise<RecordedResponse | undefined>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  let held: (() => void) | undefined;
  let released = false;
  let gone = false;
  const errorsBefore = new Set(errorsOf(req) ?? []);

  const keep = (chunk: unknown, encoding: unknown): void => {
    if (oversized || chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : Buffer.from(chunk as Uint8Array);
    size += bytes.length;
    if (size > maxBodyBytes) {
      oversized = true;
      chunks.length = 0;
    } else chunks.push(bytes);
  };

  const writeHead = res.writeHead;
  // Headers given to writeHead alone never reach getHeaders(): set them the progressive way
  // first, so the record sees every header the client gets.
  res.writeHead = function (this: Response, status: number, ...rest: unknown[]) {
    if (held !== undefined) return this;
    const headers = rest.find((r) => typeof r === 'object' && r !== null) as
      | OutgoingHttpHeaders
      | OutgoingHttpHeader[]
      | undefined;
    const reason = typeof rest[0] === 'string' ? rest[0] : undefined;
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2)
        this.appendHeader(String(headers[i]), headers[i + 1] as string | string[]);
    } else if (headers !== undefined) {
      for (const name of Object.keys(headers)) {
        const value = headers[name];
        if (value !== undefined) this.setHeader(name, value);
      }
    }
    const original = writeHead as (this: Response, ...args: unknown[]) => Response;
    return reason === undefined ? original.call(this, status) : original.call(this, status, reason);
  } as Response['writeHead'];

  const write = res.write;
  res.write = function (this: Response, chunk: unknown, ...rest: unknown[]) {
    if (held !== undefined) return true;
    keep(chunk, rest[0]);
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Response['write'];

  const end = res.end;
  res.end = function (this: Response, ...args: unknown[]) {
    if (held !== undefined) return this;
    keep(args[0], args[1]);
    held = () => {
      // Nobody left to send it to: the record is what mattered.
      if (!gone && this.socket?.destroyed !== true) (end as (...a: unknown[]) => Response).apply(this, args);
    };
    readsSent(this);
    const err = newError(errorsOf(req), errorsBefore);
    if (err !== undefined) fail(err.error);
    else settle(oversized ? omitted(this) : record(this, chunks));
    return this;
  } as Response['end'];

  // Only a close before the handler's end means the client went away (a close after it is the
  // response's own, once released).
  const onClose = (): void => {
    if (held === undefined) gone = true;
  };
  res.once('close', onClose);

  return {
    response,
    release() {
      if (released) return;
      released = true;
      res.writeHead = writeHead;
      res.write = write;
      res.end = end;
      unread(res);
      const send = held;
      held = undefined;
      send?.();
    },
  };
}

// While the end is held the response is, for everything else in the app, sent: own properties
// shadow the prototype's getters, and its status and headers are frozen (an error handler's
// `res.status(500).json()` would otherwise send the recorded body under its own status and
// length), until the release.
const FROZEN = ['setHeader', 'appendHeader', 'removeHeader'] as const;

function readsSent(res: Response): void {
  for (const name of ['headersSent', 'writableEnded'])
    Object.defineProperty(res, name, { configurable: true, get: () => true });
  for (const name of FROZEN) Object.defineProperty(res, name, { configurable: true, value: () => res });
  for (const name of ['statusCode', 'statusMessage'] as const) {
    const value = res[name];
    Object.defineProperty(res, name, { configurable: true, get: () => value, set: () => {} });
  }
}

function unread(res: Response): void {
  const r = res as unknown as Record<string, unknown>;
  for (const name of ['headersSent', 'writableEnded', ...FROZEN]) delete r[name];
  // Plain data properties (on the prototype until first set): assigned back, with their held values.
  for (const name of ['statusCode', 'statusMessage']) {
    const value = r[name];
    delete r[name];
    r[name] = value;
  }
}

/** An error the router saw since the capture began, the latest; undefined for none. */
function newError(
  seen: ReadonlySet<unknown> | undefined,
  before: ReadonlySet<unknown>,
): { error: unknown } | undefined {
  let found: { error: unknown } | undefined;
  if (seen !== undefined) for (const e of seen) if (!before.has(e)) found = { error: e };
  return found;
}

// Express's compression (or any encoding middleware) sits inside this capture: the bytes copied
// are the ones before encoding, so the encoding header would describe a body the replay does not
// send. The replay goes out unencoded (the header is left out with the bytes' length).
const DROPPED_HERE = new Set(['content-encoding']);

function headersOf(res: Response): [string, string][] {
  const headers: [string, string][] = [];
  const all = res.getHeaders();
  for (const name of Object.keys(all)) {
    const lower = name.toLowerCase();
    if (!recordedHeader(lower) || DROPPED_HERE.has(lower)) continue;
    const value = all[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.push([lower, v]);
    else headers.push([lower, String(value)]);
  }
  return headers;
}

function record(res: Response, chunks: readonly Buffer[]): RecordedResponse {
  return { status: res.statusCode, headers: headersOf(res), body: Buffer.concat(chunks).toString('base64') };
}

function omitted(res: Response): RecordedResponse {
  return { status: res.statusCode, headers: headersOf(res), body: '', omitted: true };
}

/** Sends a recorded response again: its status, its headers, its body bytes, and the replayed header. */
export function replay(res: Response, recorded: RecordedResponse): void {
  res.status(recorded.status);
  for (const [name, values] of headersByName(recorded))
    res.setHeader(name, values.length === 1 ? (values[0] as string) : values);
  res.setHeader(REPLAYED_HEADER, 'true');
  res.end(Buffer.from(recorded.body, 'base64'));
}
