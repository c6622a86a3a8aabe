// How a handler's response is copied for its record without holding a stream back from the
// client: the body is read as the handler writes it and passed on, its bytes copied up to a
// bound, so a streamed response (SSE, `stream()`, a ReadableStream) reaches the client as written.
import { recordedHeader } from '../http/idempotency-key.js';
import type { RecordedResponse } from '../http/request.js';
import { concat, toBase64 } from './bytes.js';

/** A response on its way to the client, and its record once known. */
export interface Relay {
  /** What the client gets: the response itself, or the same status and headers over a copying body. */
  readonly response: Response;
  /**
   * The record: the whole body once it ended within the bound; body-less (`omitted`) as soon as it
   * passes the bound, is declared a stream, cannot be read, or the client stops reading. Rejects
   * when the handler's body stream fails (a handler's error: the key is released).
   */
  readonly recorded: Promise<RecordedResponse>;
  /** Whether the body is relayed: the client may be sent the response before `recorded` settles. */
  readonly relayed: boolean;
}

/**
 * Relays `res`, copying at most `bound` body bytes. The relayed body ends only once `settled`
 * does (the record stored): a client that retries as soon as it has the whole response is
 * replayed it, never told 409 "still in progress".
 */
export function relay(res: Response, bound: number, settled: Promise<unknown>): Relay {
  const head = { status: res.status, headers: recordedHeaders(res) };
  const omitted: RecordedResponse = { ...head, body: '', omitted: true };
  // No body: nothing to copy or hold back.
  if (res.body === null)
    return { response: res, recorded: Promise.resolve({ ...head, body: '' }), relayed: false };
  // Declared a stream (Hono's streamSSE and streamText say so; an SSE stream may never end) or
  // already read by another middleware: kept as its status and headers only, sent untouched.
  if (res.bodyUsed || declaredStream(res))
    return { response: res, recorded: Promise.resolve(omitted), relayed: false };

  let resolve!: (r: RecordedResponse) => void;
  let reject!: (err: unknown) => void;
  const recorded = new Promise<RecordedResponse>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  const reader = res.body.getReader();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let cancelled = false;
  // Past the bound the handler's body is read only as the client asks for it (`demand`): what
  // is held for a slow client stays within the bound.
  let demand = false;
  let wake: (() => void) | undefined;
  const body = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        demand = true;
        wake?.();
      },
      cancel(reason) {
        // The client went away mid-body: the handler ran all the same, so a retry is told how it
        // ended rather than running it again.
        cancelled = true;
        resolve(omitted);
        wake?.();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  // Up to the bound the body is read as fast as the handler writes it, whether or not the client
  // reads (a test's `app.request` may never read it): the record does not wait on the client.
  const pump = async (): Promise<void> => {
    let chunks: Uint8Array[] | undefined = [];
    let size = 0;
    for (;;) {
      while (chunks === undefined && !demand && !cancelled)
        await new Promise<void>((ok) => {
          wake = ok;
        });
      demand = false;
      if (cancelled) return;
      const step = await reader.read();
      if (cancelled) return;
      if (step.done) break;
      if (chunks !== undefined) {
        size += step.value.byteLength;
        if (size > bound) {
          // Over the bound the copy stops (its bytes are dropped) and the rest flows on uncopied.
          chunks = undefined;
          resolve(omitted);
        } else chunks.push(step.value);
      }
      controller.enqueue(step.value);
    }
    if (chunks !== undefined) resolve({ ...head, body: toBase64(concat(chunks, size)) });
    await settled.catch(() => {});
    if (!cancelled) controller.close();
  };
  pump().catch((err: unknown) => {
    // The handler's body stream failed: a handler's error (the key is released), and the
    // client's response ends with it.
    reject(err);
    if (!cancelled) controller.error(err);
  });
  const response = new Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
  return { response, recorded, relayed: true };
}

function declaredStream(res: Response): boolean {
  const type = res.headers.get('content-type') ?? '';
  return (
    /^\s*text\/event-stream\s*(;|$)/i.test(type) ||
    /\bchunked\b/i.test(res.headers.get('transfer-encoding') ?? '')
  );
}

/** The headers `recordedHeader` keeps; they iterate with lower-case names, repeats joined by ', '. */
function recordedHeaders(res: Response): [string, string][] {
  const headers: [string, string][] = [];
  for (const [name, value] of res.headers) if (recordedHeader(name)) headers.push([name, value]);
  return headers;
}
