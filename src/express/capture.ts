// Captures the response an Express handler writes, for the Idempotency-Key middleware to record:
// its status, the headers worth replaying (recordedHeader) and its body bytes. The handler's
// writes go out as they come; only its final `end` is held until the record is stored, so a
// client that has seen the whole response and retries gets the replay, never a 409.
import type { OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';
import type { Response } from 'express';
import { recordedHeader } from '../http/idempotency-key.js';
import type { RecordedResponse } from '../http/request.js';

/** One response being captured. */
export interface Capture {
  /** Resolves once the handler ends the response (undefined: not recordable), never rejects. */
  readonly response: Promise<RecordedResponse | undefined>;
  /** Lets the held `end` through (after the record is stored or given up); idempotent. */
  release(): void;
}

/**
 * Wraps `res.writeHead`, `res.write` and `res.end`. Bodies over `maxBodyBytes` are sent as
 * they are and not recorded (the copy stops growing there); a response closed before its end
 * (the client went away) is not recorded either.
 */
export function captureResponse(res: Response, maxBodyBytes: number): Capture {
  const chunks: Buffer[] = [];
  let size = 0;
  let oversized = false;
  let settle: (r: RecordedResponse | undefined) => void = () => {};
  const response = new Promise<RecordedResponse | undefined>((resolve) => {
    settle = resolve;
  });
  let held: (() => void) | undefined;
  let released = false;

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
    keep(chunk, rest[0]);
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Response['write'];

  const end = res.end;
  res.end = function (this: Response, ...args: unknown[]) {
    if (held !== undefined || released) return (end as (...a: unknown[]) => Response).apply(this, args);
    keep(args[0], args[1]);
    held = () => (end as (...a: unknown[]) => Response).apply(this, args);
    settle(oversized ? undefined : record(this, chunks));
    return this;
  } as Response['end'];

  // The client went away before the handler ended: nothing to record, nothing to hold.
  res.once('close', () => settle(undefined));

  return {
    response,
    release() {
      if (released) return;
      released = true;
      res.writeHead = writeHead;
      res.write = write;
      res.end = end;
      held?.();
    },
  };
}

function record(res: Response, chunks: readonly Buffer[]): RecordedResponse {
  const headers: [string, string][] = [];
  const all = res.getHeaders();
  for (const name of Object.keys(all)) {
    if (!recordedHeader(name)) continue;
    const value = all[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.push([name.toLowerCase(), v]);
    else headers.push([name.toLowerCase(), String(value)]);
  }
  return { status: res.statusCode, headers, body: Buffer.concat(chunks).toString('base64') };
}

/** Sends a recorded response again: its status, its headers, its body bytes, and the replayed header. */
export function replay(res: Response, recorded: RecordedResponse, replayedHeader: string): void {
  res.status(recorded.status);
  const byName = new Map<string, string[]>();
  for (const [name, value] of recorded.headers) {
    const list = byName.get(name);
    if (list === undefined) byName.set(name, [value]);
    else list.push(value);
  }
  for (const [name, values] of byName)
    res.setHeader(name, values.length === 1 ? (values[0] as string) : values);
  res.setHeader(replayedHeader, 'true');
  res.end(Buffer.from(recorded.body, 'base64'));
}
