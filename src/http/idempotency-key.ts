// The framework-neutral `Idempotency-Key` middleware (draft-ietf-httpapi-idempotency-key-header):
// the first request with a key runs and its response is recorded; a repeat gets that response
// again, byte for byte; a repeat while the first still runs gets 409, the same key with another
// request 422, a missing key on a route that requires one 400. Built on createIdempotency: one
// record per key, leased while the handler runs, on any onceflow store.
import { InvalidOptionError, isOnceflowError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import type { Idempotency } from '../idempotency/idempotency.js';
import { problem } from './problem.js';
import type { HttpAnswer, HttpRequestInfo, RecordedResponse } from './request.js';

/** Options of the Idempotency-Key middleware of every adapter (`R`: the framework's request). */
export interface HttpIdempotencyOptions<R> {
  /**
   * Where responses are recorded and for how long: `createIdempotency({ store, name, ttl, lease,
   * maxResultBytes })`. Its `maxResultBytes` bounds a recorded response (the body is kept base64:
   * 4/3 of its bytes, plus the headers); a larger response is sent and not recorded.
   */
  idempotency: Idempotency;
  /** The methods the key applies to. Default `['POST', 'PATCH']` (the draft's non-idempotent ones). */
  methods?: readonly string[];
  /** Refuse (400) a request of those methods without a key. Default false: it runs as it is. */
  required?: boolean;
  /**
   * Whose keys these are (a user or API-key id): keys are looked up per scope, so two clients
   * choosing the same key never see each other's responses. Default: one scope for everyone.
   */
  scope?: (request: R) => string | undefined | Promise<string | undefined>;
  /**
   * What makes two requests "the same" beside the key: default the method, the URL (path and
   * query) and the body the adapter read. The same key with another fingerprint answers 422.
   */
  fingerprint?: (request: R) => unknown;
  /** Which recorded statuses are replayed. Default: below 500 (a 5xx is not recorded: a retry runs again). */
  record?: (status: number) => boolean;
}

const OPTIONS = keysOf<HttpIdempotencyOptions<unknown>>({
  idempotency: true,
  methods: true,
  required: true,
  scope: true,
  fingerprint: true,
  record: true,
});

/** The header read. */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** Set on a replayed response, so a client (and a log) can tell (as Stripe's API does). */
export const REPLAYED_HEADER = 'idempotent-replayed';
// A key of at most 255 characters of visible ASCII: a UUID (36) or a ULID (26) with room for a
// client's own prefix. Scoped, it still fits the idempotency key bound (LIMITS.keyBytes, 512).
const MAX_KEY_CHARS = 255;
const MAX_SCOPE_CHARS = 200;
const KEY_CHARS = /^[\x21-\x7e]+$/;

/**
 * Response headers never recorded: the ones of one connection or one moment (`date`,
 * `connection`, `keep-alive`, `transfer-encoding`, `content-length`: recomputed on replay), the
 * rate limit fields of the original request (a replay reports its own), and `set-cookie` (a
 * session given to one request must not be handed out again).
 */
const DROPPED = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'set-cookie',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  REPLAYED_HEADER,
]);

/** Whether a response header is recorded for replays. */
export function recordedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return !DROPPED.has(lower) && !lower.startsWith('x-ratelimit-');
}

/** What became of a request. */
export type IdempotencyVerdict =
  /** Not for this middleware (another method, or no key where none is required): run it as it is. */
  | { readonly kind: 'pass' }
  /** The handler ran (and answered); `recorded`: its response is replayed to repeats. */
  | { readonly kind: 'executed'; readonly recorded: boolean }
  /** A repeat: send this response (and the replayed header). */
  | { readonly kind: 'replay'; readonly response: RecordedResponse }
  /** A refusal: 400, 409 or 422 with a problem body. */
  | { readonly kind: 'answer'; readonly answer: HttpAnswer };

/** A validated middleware core: `handle` decides a request, running it through `run` when it is the first. */
export interface HttpIdempotency<R> {
  /**
   * `body`: the request's body as the adapter read it (for the fingerprint). `run` runs the
   * framework's handler and resolves with its response once it is complete (undefined when the
   * adapter could not capture it), or rejects with the handler's error.
   */
  handle(
    request: R,
    info: HttpRequestInfo,
    body: unknown,
    run: () => Promise<RecordedResponse | undefined>,
  ): Promise<IdempotencyVerdict>;
}

// Thrown inside the idempotent run for a response not to keep: the key is released.
class NotRecorded extends Error {}

/** Validates the options (a typed error naming a bad one) and returns the core. */
export function httpIdempotency<R>(options: HttpIdempotencyOptions<R>): HttpIdempotency<R> {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { idempotency }', options);
  knownKeys('', options, OPTIONS);
  const idempotency = options.idempotency;
  if (typeof (idempotency as Partial<Idempotency> | undefined)?.run !== 'function')
    throw new InvalidOptionError('idempotency', 'an idempotency from createIdempotency()', idempotency);
  const methods = new Set((options.methods ?? ['POST', 'PATCH']).map((m, i) => methodName(m, i)));
  if (options.required !== undefined && typeof options.required !== 'boolean')
    throw new InvalidOptionError('required', 'true or false', options.required);
  for (const fn of ['scope', 'fingerprint', 'record'] as const) {
    if (options[fn] !== undefined && typeof options[fn] !== 'function')
      throw new InvalidOptionError(fn, 'a function', options[fn]);
  }
  const { scope, fingerprint } = options;
  const required = options.required === true;
  const record = options.record ?? ((status: number) => status < 500);

  return {
    async handle(request, info, body, run) {
      if (!methods.has(info.method)) return { kind: 'pass' };
      const raw = info.header(IDEMPOTENCY_KEY_HEADER);
      if (raw === undefined) {
        if (!required) return { kind: 'pass' };
        return answer(
          problem('idempotency-key-missing', 400, `${info.method} here needs an Idempotency-Key header.`),
        );
      }
      const key = parseKey(raw);
      if (key === undefined)
        return answer(
          problem(
            'idempotency-key-invalid',
            400,
            `The Idempotency-Key must be 1-${MAX_KEY_CHARS} visible ASCII characters, optionally as a quoted string.`,
          ),
        );
      const owner = scope === undefined ? '' : ((await scope(request)) ?? '');
      if (owner.length > MAX_SCOPE_CHARS)
        throw new InvalidOptionError(
          'scope',
          `a function returning at most ${MAX_SCOPE_CHARS} characters`,
          owner,
        );
      const payload =
        fingerprint === undefined ? { method: info.method, url: info.url, body } : fingerprint(request);
      let recorded = true;
      try {
        const result = await idempotency.run(
          { key: `${owner.length}:${owner}:${key}`, payload },
          async () => {
            const response = await run();
            if (response === undefined || !record(response.status)) throw new NotRecorded();
            return response;
          },
        );
        switch (result.outcome) {
          case 'executed':
            return { kind: 'executed', recorded: true };
          case 'replayed':
            return { kind: 'replay', response: result.value };
          case 'in-progress': {
            const retryAfter = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
            return answer(
              problem(
                'idempotency-key-in-use',
                409,
                'A request with this Idempotency-Key is still being processed; retry later.',
                { 'retry-after': String(retryAfter) },
              ),
            );
          }
          case 'mismatch':
            return answer(
              problem(
                'idempotency-key-reused',
                422,
                'This Idempotency-Key was used with another request (method, URL or body).',
              ),
            );
        }
      } catch (err) {
        // The handler ran and answered; its response is just not kept (a 5xx, one too large to
        // record, or a lease lost meanwhile: the key is free again, a retry runs again).
        if (err instanceof NotRecorded) recorded = false;
        else if (isOnceflowError(err, 'ERR_RESULT_TOO_LARGE') || isOnceflowError(err, 'ERR_LEASE_LOST'))
          recorded = false;
        else throw err;
      }
      return { kind: 'executed', recorded };
    },
  };
}

const answer = (a: HttpAnswer): IdempotencyVerdict => ({ kind: 'answer', answer: a });

function methodName(m: unknown, i: number): string {
  if (typeof m !== 'string' || !/^[A-Za-z]+$/.test(m))
    throw new InvalidOptionError(`methods[${i}]`, 'an HTTP method name', m);
  return m.toUpperCase();
}

/**
 * The key of a header value: the draft's form is a structured-field string (`"abc"`); a bare
 * token (`abc`), which many clients send, is taken as it is. Undefined when neither.
 */
export function parseKey(raw: string): string | undefined {
  let key = raw.trim();
  if (key.startsWith('"')) {
    if (key.length < 2 || !key.endsWith('"')) return undefined;
    key = key.slice(1, -1).replace(/\\(["\\])/g, '$1');
  }
  if (key.length === 0 || key.length > MAX_KEY_CHARS || !KEY_CHARS.test(key)) return undefined;
  return key;
}
