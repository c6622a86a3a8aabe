// onceflow's Idempotency-Key plugin for Fastify: the first request with a key runs and its reply
// is recorded; a repeat gets it again byte for byte; 409 while the first runs, 422 for the same
// key on another request, 400 for a missing key where one is required.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { bodyDigest } from '../http/body-digest.js';
import {
  HTTP_IDEMPOTENCY_OPTIONS,
  type HttpIdempotency,
  type HttpIdempotencyOptions,
  headersByName,
  httpIdempotency,
  type IdempotencyVerdict,
  REPLAYED_HEADER,
} from '../http/idempotency-key.js';
import type { RecordedResponse } from '../http/request.js';
import { appendRouteHook, siblingPlugin, withoutRegisterOptions } from './plugin-meta.js';
import { captureNow, captureStream, copyBound, isStream, replyHead } from './reply-capture.js';
import { requestInfo, sendAnswer } from './request-info.js';
import { routePolicy } from './route-config.js';

/**
 * Options of {@link idempotencyPlugin}: those of every onceflow adapter, plus `global`. A route's
 * `config: { onceflow: { idempotency } }` replaces any of them for that route, or is `false`.
 */
export interface IdempotencyPluginOptions extends Partial<HttpIdempotencyOptions<FastifyRequest>> {
  /**
   * `true` (default): every route declared after the plugin (in its context and below) honours
   * the header for `methods`, with `idempotency` required here. `false`: only routes whose
   * config names an `idempotency` policy do.
   */
  global?: boolean;
  /**
   * The longest a first request may hold its key without a reply reaching `onSend` (a handler
   * whose promise never settles, its client long gone). Past it the key is released: a retry
   * runs the handler again, even if the first one is in fact still running. A reply that started
   * streaming within it is kept as its status and headers. Default `'5m'`.
   */
  maxRunTime?: Duration;
}

const OPTIONS: readonly string[] = [
  ...HTTP_IDEMPOTENCY_OPTIONS,
  ...keysOf<Omit<IdempotencyPluginOptions, keyof HttpIdempotencyOptions<FastifyRequest>>>({
    global: true,
    maxRunTime: true,
  }),
];
const ROUTE_OPTIONS = OPTIONS.filter((k) => k !== 'global');

// Node's own bound on a request (http.Server's `requestTimeout`, 300 s by default): a handler
// still without a reply after it is taken for hung, not slow.
const DEFAULT_MAX_RUN_TIME_MS = 300_000;

/** What a route's hooks need: the core deciding, and the plugin's own bounds. */
interface RouteIdempotency {
  readonly core: HttpIdempotency<FastifyRequest>;
  /** The most body bytes copied for a record (see `copyBound`). */
  readonly bound: number;
  readonly maxRunTimeMs: number;
}

/** A first request's run, from its preHandler to its onSend (or its stream's end). */
interface Running {
  /** Hands the captured reply (undefined: no reply at all) or the handler's error to the core's `run`. */
  settle(outcome: { response: RecordedResponse | undefined } | { error: unknown }): void;
  readonly bound: number;
  /** Set once the reply reached onSend: it is being sent (a stream may still be streaming). */
  sending?: RecordedResponse;
  /** The core's verdict: settles once the reply is recorded (or the key released). */
  readonly verdict: Promise<IdempotencyVerdict>;
  /** The handler's error, as the onError hook saw it. */
  error?: { readonly value: unknown };
}

const RUNNING = Symbol('onceflow.idempotency.running');
type WithRunning = FastifyRequest & { [RUNNING]?: Running | undefined };

/**
 * The `Idempotency-Key` header for Fastify routes, as a plugin applying to the routes declared
 * after it in the same context (as a fastify-plugin plugin does). Per route, three hooks, each
 * the last of its kind so authentication, validation and other onSend hooks have run:
 * - `preHandler` (the body is parsed: it is part of the fingerprint) decides. A repeat is
 *   answered from here (the recorded status, headers and body, plus `idempotent-replayed: true`),
 *   as are 400, 409 and 422; the first request goes on to the handler.
 * - `onSend` captures the reply the client is about to get (status, the headers `recordedHeader`
 *   keeps, the serialized payload's bytes) and returns it only once it is recorded, so a client
 *   that retries after seeing it gets the replay. A streamed payload is sent as it comes and
 *   recorded when it ends: whole within the copy bound (3/4 of the idempotency's
 *   `maxResultBytes`), else as its status and headers (`idempotent-body: omitted` on a replay).
 * - `onError` sees a handler's error: the key is released (a retry runs again), and the error
 *   response is sent as Fastify's error handler made it.
 *
 * A route's `config: { onceflow: { idempotency: { required: true } } }` changes options for that
 * route; `idempotency: false` exempts it.
 *
 * @example
 * ```ts no-run
 * const app = Fastify();
 * await app.register(idempotencyPlugin, {
 *   idempotency: createIdempotency({ store, name: 'orders-api', ttl: '24h' }),
 *   // The identity your authentication hook set: never a header the client chooses itself.
 *   scope: (request) => request.user.id,
 * });
 * app.post('/orders', { config: { onceflow: { idempotency: { required: true } } } }, createOrder);
 * ```
 */
export const idempotencyPlugin: FastifyPluginAsync<IdempotencyPluginOptions> = siblingPlugin(
  'onceflow-idempotency',
  async (app, raw) => {
    if (!isPlainObject(raw as unknown))
      throw new InvalidOptionError('options', 'an object like { idempotency }', raw);
    const options = withoutRegisterOptions(raw) as IdempotencyPluginOptions;
    knownKeys('', options, OPTIONS);
    const { global: globalOption, ...base } = options;
    if (globalOption !== undefined && typeof globalOption !== 'boolean')
      throw new InvalidOptionError('global', 'true or false', globalOption);
    const shared = globalOption === false ? undefined : routeIdempotency(base);
    // Without a shared policy the routes read maxRunTime later: a bad one still fails here.
    if (shared === undefined && base.maxRunTime !== undefined) parseDuration(base.maxRunTime, 'maxRunTime');

    app.addHook('onRoute', (route) => {
      const own = routePolicy(route as RouteOptions, 'idempotency');
      if (own === false || (own === undefined && shared === undefined)) return;
      let policy: RouteIdempotency;
      if (own === undefined) policy = shared as RouteIdempotency;
      else {
        const where = `${route.method} ${route.url}: config.onceflow.idempotency`;
        knownKeys(where, own, ROUTE_OPTIONS);
        if (own.idempotency === undefined && base.idempotency === undefined)
          throw new InvalidOptionError(
            `${where}.idempotency`,
            'an idempotency from createIdempotency() (none here nor in the plugin)',
            undefined,
          );
        policy = routeIdempotency({ ...base, ...own }, `${where}.`);
      }
      appendRouteHook(route as RouteOptions, 'preHandler', decideHook(policy));
      appendRouteHook(route as RouteOptions, 'onError', onErrorHook);
      appendRouteHook(route as RouteOptions, 'onSend', captureHook);
    });
  },
);

function routeIdempotency(options: Omit<IdempotencyPluginOptions, 'global'>, where = ''): RouteIdempotency {
  const { maxRunTime, ...rest } = options;
  const maxRunTimeMs =
    maxRunTime === undefined ? DEFAULT_MAX_RUN_TIME_MS : parseDuration(maxRunTime, `${where}maxRunTime`);
  if (maxRunTimeMs < 1)
    throw new InvalidOptionError(`${where}maxRunTime`, 'a duration of at least 1 ms', maxRunTime);
  const core = httpIdempotency(rest as HttpIdempotencyOptions<FastifyRequest>);
  return { core, bound: copyBound(rest.idempotency?.maxResultBytes), maxRunTimeMs };
}

function decideHook({ core, bound, maxRunTimeMs }: RouteIdempotency) {
  return async function onceflowIdempotency(request: FastifyRequest, reply: FastifyReply) {
    let started!: () => void;
    const runStarted = new Promise<'run'>((resolve) => {
      started = () => resolve('run');
    });
    let settle!: Running['settle'];
    const captured = new Promise<RecordedResponse | undefined>((resolve, reject) => {
      settle = (outcome) => ('error' in outcome ? reject(outcome.error) : resolve(outcome.response));
    });
    const verdict = core.handle(request, requestInfo(request), bodyDigest(request.body), () => {
      started();
      return captured;
    });
    // Either the core calls `run` (this is the first request: the handler runs next, and the
    // verdict comes once onSend has captured its reply), or it decides without running it.
    const first = await Promise.race([runStarted, verdict]);
    if (first === 'run') {
      let done = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const running: Running = {
        verdict,
        bound,
        settle(outcome) {
          if (done) return;
          done = true;
          clearTimeout(timer);
          settle(outcome);
        },
      };
      // Observed in onSend; this keeps a verdict nobody waits for (a hijacked reply) from being
      // an unhandled rejection.
      verdict.catch(() => {});
      (request as WithRunning)[RUNNING] = running;
      // A handler that never replies would hold the key as long as the process lives (the lease
      // is renewed meanwhile): past maxRunTime it is released, or kept body-less when the reply
      // is already streaming.
      timer = setTimeout(() => running.settle({ response: running.sending }), maxRunTimeMs);
      timer.unref?.();
      // A reply that never reaches onSend (`reply.hijack()`: the handler wrote it itself) is not
      // recorded: the key is released once it is sent. A client gone while the handler still
      // runs is not that case: Fastify still runs onSend when the handler returns, and the key
      // stays held until then, or a retry would run beside the first.
      reply.raw.once('close', () => {
        if (running.sending === undefined && (reply.raw.writableFinished || reply.sent))
          running.settle({ response: undefined });
      });
      return undefined;
    }
    switch (first.kind) {
      case 'replay':
        return sendReplay(reply, first.response);
      case 'answer':
        return sendAnswer(reply, first.answer);
      default:
        return undefined;
    }
  };
}

async function onErrorHook(request: FastifyRequest, _reply: FastifyReply, error: unknown) {
  const running = (request as WithRunning)[RUNNING];
  if (running !== undefined) running.error = { value: error };
}

async function captureHook(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
  const running = (request as WithRunning)[RUNNING];
  if (running === undefined) return payload;
  (request as WithRunning)[RUNNING] = undefined;
  const handlerError = running.error;
  if (handlerError !== undefined) {
    running.settle({ error: handlerError.value });
    await running.verdict.catch(() => {});
    return payload;
  }
  running.sending = replyHead(reply);
  // A stream is sent as it comes and recorded when it ends: holding it back until then would
  // stall a slow one. A retry in between gets 409, then the replay.
  if (isStream(payload))
    return captureStream(reply, payload, running.bound, (response) => running.settle({ response }));
  running.settle({ response: captureNow(reply, payload, running.bound) });
  // The reply goes once it is recorded, so a client that retries after seeing it gets the
  // replay. A store failing meanwhile is the core's to report (its `onRecordError`); the reply
  // whose effect happened is sent either way.
  await running.verdict.catch(() => {});
  return payload;
}

function sendReplay(reply: FastifyReply, response: RecordedResponse): FastifyReply {
  reply.code(response.status);
  const byName = headersByName(response);
  for (const [name, values] of byName) reply.header(name, values.length === 1 ? values[0] : values);
  reply.header(REPLAYED_HEADER, 'true');
  // No body and no type: sent as the first reply was (a payload of bytes would get Fastify's
  // `application/octet-stream`).
  if (response.body === '' && !byName.has('content-type')) return reply.send();
  return reply.send(Buffer.from(response.body, 'base64'));
}
