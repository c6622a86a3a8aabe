// The body part of an idempotent request's fingerprint, for the Node adapters (Express, Fastify):
// a SHA-256 of its bytes, or of the JSON the framework parsed it into. A digest, not the body: the
// idempotency's payload bound (LIMITS.payloadBytes, 1 MiB) then never refuses a large upload, and
// raw bodies (Buffers, which the payload hash refuses as class instances) count as their bytes.
// onceflow/hono digests with Web Crypto instead (src/hono/bytes.ts): no Node builtin there.
import { createHash } from 'node:crypto';

/**
 * The digest of a request body as a framework hands it over: bytes (a Buffer, a Uint8Array, an
 * ArrayBuffer) as they are, a string as UTF-8, anything else (parsed JSON, a form's object) as
 * its `JSON.stringify` text (a retry sends the same bytes, which parse into the same text).
 * Undefined for no body.
 */
export function bodyDigest(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  const hash = createHash('sha256');
  if (body instanceof Uint8Array) hash.update(body);
  else if (body instanceof ArrayBuffer) hash.update(new Uint8Array(body));
  else if (typeof body === 'string') hash.update(body, 'utf8');
  else hash.update(JSON.stringify(body) ?? String(body), 'utf8');
  return hash.digest('base64url');
}
