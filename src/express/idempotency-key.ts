// The Idempotency-Key middleware for Express: the framework-neutral core of
// src/http/idempotency-key.ts (record the first response, replay it, 409 / 422 / 400), with the
// response captured from what the handler writes (capture.ts) and replayed byte for byte.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject } from '../core/validate.js';
import { bodyDigest } from '../http/body-digest.js';
import { type HttpIdempotencyOptions, httpIdempotency } from '../http/idempotency-key.js';
import { type Capture, captureResponse, replay } from './capture.js';
import { sendAnswer } from './rate-limit.js';
import { requestInfo } from './request-info.js';

/** Options of {@link idempotencyKey}: those of every onceflow adapter, plus the capture bound. */
export interface IdempotencyKeyOptions extends HttpIdempotencyOptions<Request> {
  /**
   * The largest response body copied for the record, in bytes (at most 512 MiB). Default: what
   * the idempotency's `maxResultBytes` can keep (3/4 of it: the record holds the body as base64,
   * 4/3 of its bytes), 1 MiB for an idempotency that does not say. A larger body is sent as it is
   * and recorded without it (`omitted`): a retry gets the status and headers with
   * `idempotent-body: omitted`, and the handler does not run again.
   */
  maxBodyBytes?: number;
}

// For an idempotency of the user's own without `maxResultBytes`: 1 MiB, a large API response
// (most APIs cap their bodies near 1 MB); held in memory once per request in flight.
const FALLBACK_MAX_BODY_BYTES = 1_048_576;
// Redis refuses a bulk argument over its default proto-max-bulk-len (512 MiB): no larger body
// could ever be recorded there.
const MAX_BODY_BYTES = 536_870_912;

/**
 * An Express middleware for the `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header):
 * the first request with a key runs the route's handler and its response (status, the headers
 * worth replaying, the body bytes) is recorded; a repeat gets the same response again, with
 * `idempotent-replayed: true`; a repeat while the first still runs gets 409, the same key on
 * another request 422, a missing key 400 when `required`.
 *
 * The request's fingerprint is its method, `originalUrl` and a digest of `req.body` (bodyDigest:
 * bytes as they are, parsed JSON as its text): mount a body parser (`express.json()`,
 * `express.raw()`) before this middleware for the body to count. Without one `req.body` is
 * undefined and the fingerprint is the method and URL alone.
 *
 * An error (a throw, a rejection, `next(err)`) before the handler's response ends is never
 * recorded, whatever status the error handler answers: the key is released, a retry runs again.
 *
 * The handler's final `res.end` is held until the record is stored (one store call), so a client
 * that got the whole response and retries is replayed it, never told 409.
 */
export function idempotencyKey(options: IdempotencyKeyOptions): RequestHandler {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { idempotency }', options);
  const { maxBodyBytes: rawMax, ...rest } = options;
  const maxBodyBytes = rawMax ?? defaultMaxBodyBytes(options.idempotency?.maxResultBytes);
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 0 || maxBodyBytes > MAX_BODY_BYTES)
    throw new InvalidOptionError('maxBodyBytes', `a whole number of bytes in [0, ${MAX_BODY_BYTES}]`, rawMax);
  const core = httpIdempotency<Request>(rest);

  return (req: Request, res: Response, next: NextFunction): void => {
    let capture: Capture | undefined;
    const run = () => {
      capture = captureResponse(req, res, maxBodyBytes);
      next();
      return capture.response;
    };
    core.handle(req, requestInfo(req), bodyDigest(req.body), run).then(
      (verdict) => {
        switch (verdict.kind) {
          case 'pass':
            next();
            return;
          case 'executed':
            capture?.release();
            return;
          case 'replay':
            replay(res, verdict.response);
            return;
          case 'answer':
            sendAnswer(res, verdict.answer);
        }
      },
      (err: unknown) => {
        // Once the handler ran, only its own error rejects (a store failure then is reported by
        // the core, onRecordError): Express already has that error and its error handler's
        // response is held; the key is released now, so let it through. Before the handler ran
        // (the store failed at the start), Express's error handler answers.
        if (capture !== undefined) capture.release();
        else next(err);
      },
    );
  };
}

/** The copy bound `maxResultBytes` implies: a body over 3/4 of it (base64) is never kept whole. */
function defaultMaxBodyBytes(maxResultBytes: unknown): number {
  if (typeof maxResultBytes !== 'number' || !Number.isSafeInteger(maxResultBytes) || maxResultBytes <= 0)
    return FALLBACK_MAX_BODY_BYTES;
  return Math.min(MAX_BODY_BYTES, Math.floor((maxResultBytes * 3) / 4));
}
