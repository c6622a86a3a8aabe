// The framework-neutral `Idempotency-Key` middleware (draft-ietf-httpapi-idempotency-key-header):
// the first request with a key runs and its response is recorded; a repeat gets that response
// again, byte for byte; a repeat while the first still runs gets 409, the same key with another
// request 422, a missing key on a route that requires one 400. Built on createIdempotency: one
// record per key, leased while the handler runs, on any onceflow store.
import { InvalidOptionError, isOnceflowError } from '../core/errors.js';
import { messageOf, warn } from '../core/observer.js';
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
  /**
   * Told when a response that ran could not be recorded because the store failed (the client got
   * the response; a retry after the lease may run the handler again). Default: a process warning
   * (`ONCEFLOW_IDEMPOTENCY_NOT_RECORDED`), `console.error` where there is no `process`.
   */
  onRecordError?: (error: unknown, info: HttpRequestInfo) => void;
}

/** Every option of the core: an adapter's own list is these plus its own (see the adapters). */
export const HTTP_IDEMPOTENCY_OPTIONS = keysOf<HttpIdempotencyOptions<unknown>>({
  idempotency: true,
  methods: true,
  required: true,
  scope: true,
  fingerprint: true,
  record: true,
  onRecordError: true,
});

/** The header read. */
export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** Set on a replayed response, so a client (and a log) can tell (as Stripe's API does). */
export const REPLAYED_HEADER = 'idempotent-replayed';
/** Set (`omitted`) on a replay whose first response's body could not be kept. */
export const OMITTED_HEADER = 'idempotent-body';
// A key of at most 255 characters of visible ASCII: a UUID (36) or a ULID (26) with room for a
// client's own prefix. Scoped, it still fits the idempotency key bound (LIMITS.keyBytes, 512).
const MAX_KEY_CHARS = 255;
// The scope's UTF-8 bytes: 512 (LIMITS.keyBytes) less a key of 255 and the separators.
const MAX_SCOPE_BYTES = 250;
// What the result serializer adds around a recorded response's JSON (its type tags), at most: a
// response within `maxResultBytes` less this is kept whole, a larger one as a body-less record.
const SERIALIZER_MARGIN_BYTES = 64;
const UTF8 = new TextEncoder();
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
  OMITTED_HEADER,
]);

/** Whether a response header is recorded for replays. */
export function recordedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return !DROPPED.has(lower) && !lower.startsWith('x-ratelimit-');
}

/**
 * A recorded response's headers by name, in recorded order (a repeated header, such as
 * `set-cookie`, keeps every value): what a replay sets, one call per name.
 */
export function headersByName(recorded: RecordedResponse): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  for (const [name, value] of recorded.headers) {
    const values = byName.get(name);
    if (values === undefined) byName.set(name, [value]);
    else values.push(value);
  }
  return byName;
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
  knownKeys('', options, HTTP_IDEMPOTENCY_OPTIONS);
  const idempotency = options.idempotency;
  if (typeof (idempotency as Partial<Idempotency> | undefined)?.run !== 'function')
    throw new InvalidOptionError('idempotency', 'an idempotency from createIdempotency()', idempotency);
  const methods = new Set((options.methods ?? ['POST', 'PATCH']).map((m, i) => methodName(m, i)));
  if (options.required !== undefined && typeof options.required !== 'boolean')
    throw new InvalidOptionError('required', 'true or false', options.required);
  for (const fn of ['scope', 'fingerprint', 'record', 'onRecordError'] as const) {
    if (options[fn] !== undefined && typeof options[fn] !== 'function')
      throw new InvalidOptionError(fn, 'a function', options[fn]);
  }
  const { scope, fingerprint } = options;
  const required = options.required === true;
  const record = options.record ?? ((status: number) => status < 500);
  const onRecordError = options.onRecordError ?? reportRecordError;
  // A response kept whole must fit the idempotency's record; an idempotency without the figure
  // (one of the user's own) gets the default.
  const budget =
    (typeof idempotency.maxResultBytes === 'number' ? idempotency.maxResultBytes : 65_536) -
    SERIALIZER_MARGIN_BYTES;

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
      if (typeof owner !== 'string' || UTF8.encode(owner).length > MAX_SCOPE_BYTES)
        throw new InvalidOptionError(
          'scope',
          `a function returning at most ${MAX_SCOPE_BYTES} UTF-8 bytes`,
          owner,
        );
      const payload =
        fingerprint === undefined ? { method: info.method, url: info.url, body } : fingerprint(request);
      // Whether the handler was started: from then on its response is the client's whatever the
      // store does, and a failure to record it is reported, never turned into an error response.
      let ran = false;
      // The handler's own failure: the key is released and the error goes to the framework.
      let handlerError: { err: unknown } | undefined;
      try {
        const result = await idempotency.run(
          { key: `${owner.length}:${owner}:${key}`, payload },
          async () => {
            ran = true;
            let response: RecordedResponse | undefined;
            try {
              response = await run();
            } catch (err) {
              handlerError = { err };
              throw err;
            }
            if (response === undefined || !record(response.status)) throw new NotRecorded();
            return fitted(response, budget);
          },
        );
        switch (result.outcome) {
          case 'executed':
            return { kind: 'executed', recorded: true };
          case 'replayed':
            return { kind: 'replay', response: replayed(result.value) };
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
        // The handler ran and answered; its response is just not kept: a 5xx or no response at
        // all (the key is free again: a retry runs again), or a lease lost meanwhile.
        if (err instanceof NotRecorded || isOnceflowError(err, 'ERR_LEASE_LOST'))
          return { kind: 'executed', recorded: false };
        if (!ran || (handlerError !== undefined && handlerError.err === err)) throw err;
        onRecordError(err, info);
      }
      return { kind: 'executed', recorded: false };
    },
  };
}

/**
 * `response` as it can be kept: whole when its JSON fits `budget` bytes, else its status and
 * headers with the body left out (`omitted`): a retry then learns how the request ended, and
 * does not run it again.
 */
function fitted(response: RecordedResponse, budget: number): RecordedResponse {
  if (response.omitted !== true && fits(response, budget)) return response;
  const bodyless: RecordedResponse = {
    status: response.status,
    headers: response.headers,
    body: '',
    omitted: true,
  };
  // Headers alone too large for the record (a tiny maxResultBytes): the status is still kept.
  return fits(bodyless, budget)
    ? bodyless
    : { status: response.status, headers: [], body: '', omitted: true };
}

function fits(response: RecordedResponse, budget: number): boolean {
  const json = JSON.stringify(response);
  // Each UTF-16 unit is at most 3 UTF-8 bytes: only a text that might not fit is encoded.
  return json.length * 3 <= budget || (json.length <= budget && UTF8.encode(json).length <= budget);
}

/** A recorded response as replayed: a body-less record says so in a header of its own. */
function replayed(response: RecordedResponse): RecordedResponse {
  if (response.omitted !== true) return response;
  return { ...response, headers: [...response.headers, [OMITTED_HEADER, 'omitted']] };
}

function reportRecordError(error: unknown, info: HttpRequestInfo): void {
  warn(
    `onceflow: the response of ${info.method} ${info.url} ran but was not recorded (the store failed: ${messageOf(error)}); a retry after the lease may run it again`,
    'ONCEFLOW_IDEMPOTENCY_NOT_RECORDED',
  );
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
