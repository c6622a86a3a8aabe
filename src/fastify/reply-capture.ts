// The reply an idempotent route sends, as recorded: status, the headers worth replaying, and the
// payload's bytes when they can be copied within a bound. A payload is a string, bytes, or a
// stream (a handler's Readable, or any payload @fastify/compress has gzipped): a stream is read
// as it is sent, never held back, and recorded whole when it ends within the bound.
import { pipeline, type Readable, Transform } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { recordedHeader } from '../http/idempotency-key.js';
import type { RecordedResponse } from '../http/request.js';

/** An idempotency with no `maxResultBytes` of its own is sized as the default one (64 KiB). */
const DEFAULT_MAX_RESULT_BYTES = 65_536;

/**
 * The most body bytes worth copying for an idempotency that keeps `maxResultBytes` per record:
 * the record keeps the body base64 (4 characters per 3 bytes), so a body over 3/4 of the bound
 * can never be kept whole, and copying more of it is waste.
 */
export function copyBound(maxResultBytes: unknown): number {
  const max =
    typeof maxResultBytes === 'number' && Number.isFinite(maxResultBytes) && maxResultBytes > 0
      ? maxResultBytes
      : DEFAULT_MAX_RESULT_BYTES;
  return Math.floor((max * 3) / 4);
}

/** The reply's status and recorded headers, with no body: what is kept of a body not copied. */
export function replyHead(reply: FastifyReply): RecordedResponse {
  const headers: [string, string][] = [];
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value === undefined || !recordedHeader(name)) continue;
    const lower = name.toLowerCase();
    for (const one of Array.isArray(value) ? value : [value]) headers.push([lower, String(one)]);
  }
  return { status: reply.statusCode, headers, body: '', omitted: true };
}

/** `head` with `bytes` as its body, or still body-less when there are none to keep. */
function withBody(head: RecordedResponse, bytes: Uint8Array | undefined): RecordedResponse {
  if (bytes === undefined) return head;
  return {
    status: head.status,
    headers: head.headers,
    body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'),
  };
}

/** Whether a payload is a stream Fastify pipes to the client. */
export function isStream(payload: unknown): payload is Readable {
  return typeof (payload as { pipe?: unknown } | null | undefined)?.pipe === 'function';
}

/**
 * The reply of a payload Fastify sends as it is (no payload, a string, bytes): whole within
 * `bound` bytes, else body-less. A payload of another kind (which Fastify refuses) is body-less.
 */
export function captureNow(reply: FastifyReply, payload: unknown, bound: number): RecordedResponse {
  const head = replyHead(reply);
  if (payload === undefined || payload === null) return withBody(head, new Uint8Array(0));
  if (typeof payload === 'string') {
    // Each UTF-16 unit is at most 3 UTF-8 bytes: only a text that might not fit is measured.
    if (payload.length * 3 > bound && Buffer.byteLength(payload, 'utf8') > bound) return head;
    return withBody(head, Buffer.from(payload, 'utf8'));
  }
  if (payload instanceof Uint8Array) return withBody(head, payload.byteLength > bound ? undefined : payload);
  return head;
}

/**
 * A stream to send in place of `source`, passing every chunk on as it comes, and `done` called
 * once with the reply: whole when the stream ended within `bound` bytes, body-less when it held
 * more, failed, or was cut short (the client gone). Never undefined: the handler has run.
 */
export function captureStream(
  reply: FastifyReply,
  source: Readable,
  bound: number,
  done: (response: RecordedResponse) => void,
): Readable {
  const head = replyHead(reply);
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  let settled = false;
  const finish = (bytes: Uint8Array | undefined) => {
    if (settled) return;
    settled = true;
    done(withBody(head, bytes));
  };
  const tee = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (!over) {
        size += chunk.byteLength;
        if (size > bound) {
          over = true;
          chunks.length = 0;
        } else chunks.push(chunk);
      }
      callback(null, chunk);
    },
    flush(callback) {
      finish(over ? undefined : Buffer.concat(chunks, size));
      callback();
    },
  });
  tee.once('close', () => finish(undefined));
  // A failing source destroys the tee (the client's response is cut); a tee destroyed by Fastify
  // (the client gone) destroys the source.
  pipeline(source, tee, () => {});
  return tee;
}
