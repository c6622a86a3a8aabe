// Body bytes with Web-standard APIs only (streams, btoa/atob, Web Crypto): onceflow/hono runs
// where Hono runs (Node, Bun, Deno, Workers), so nothing here may lean on Node's Buffer or crypto.

/**
 * Reads a body stream to its end, or stops at `max` bytes: undefined when it holds more (the
 * rest is never read: this reader cancels its stream). An absent body is empty.
 */
export async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  max: number,
): Promise<Uint8Array | undefined> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      // Not awaited: a branch of a tee (a clone's body) settles its cancel only once the other
      // branch is cancelled too, and the other one is the request or response still to be read.
      reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  return concat(chunks, size);
}

/** The chunks as one array of `size` bytes (the one chunk itself when there is one). */
export function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

// String.fromCharCode takes its bytes as arguments: 32 768 of them stay far below every engine's
// argument limit (V8 ~65 535 on some paths, JavaScriptCore 65 536).
const CHUNK = 32_768;

/** Standard base64 (with padding) of any bytes. */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(binary);
}

/** The bytes of standard base64 text. */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/**
 * sha256 of the bytes, base64url without padding (43 characters): what a request body counts as
 * in an idempotent request's fingerprint, so any body up to the read bound fits the payload bound
 * (LIMITS.payloadBytes) of the record's hash, and bytes, not a parse of them, decide "the same".
 */
export async function digest(bytes: Uint8Array): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return toBase64(hash).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
