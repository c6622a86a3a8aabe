// onceflow's Idempotency-Key plugin for Fastify: the first request with a key runs and its reply
// is recorded; a repeat gets it again byte for byte; 409 while the first runs, 422 for the same
// key on another request, 400 for a missing key where one is required.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import {
  type HttpIdempotency,
  type HttpIdempotencyOptions,
  httpIdempotency,
  type IdempotencyVerdict,
  REPLAYED_HEADER,
  recordedHeader,
} from '../http/idempotency-key.js';
import type { RecordedResponse } from '../http/request.js';
import { appendRouteHook, siblingPlugin, withoutRegisterOptions } from './plugin-meta.js';
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
}

const OPTIONS = keysOf<IdempotencyPluginOptions>({
  idempotency: true,
  methods: true,
  required: true,
  scope: true,
  fingerprint: true,
  record: true,
  onRecordError: true,
  global: true,
});
const ROUTE_OPTIONS = OPTIONS.filter((k) => k !== 'global');

/** A first request's run, from its preHandler to its onSend. */
interface Running {
  /** Hands the captured reply (undefined: not capturable) or the handler's error to the core's `run`. */
  settle(outcome: { response: RecordedResponse | undefined } | { error: unknown }): void;
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
 *   that retries after seeing it gets the replay. A streamed payload is sent and not recorded.
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
 *   scope: (request) => String(request.headers['x-user-id'] ?? ''),
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
    const shared =
      globalOption === false ? undefined : httpIdempotency(base as HttpIdempotencyOptions<FastifyRequest>);

    app.addHook('onRoute', (route) => {
      const own = routePolicy(route as RouteOptions, 'idempotency');
      if (own === false || (own === undefined && shared === undefined)) return;
      let core: HttpIdempotency<FastifyRequest>;
      if (own === undefined) core = shared as HttpIdempotency<FastifyRequest>;
      else {
        const where = `${route.method} ${route.url}: config.onceflow.idempotency`;
        knownKeys(where, own, ROUTE_OPTIONS);
        if (own.idempotency === undefined && base.idempotency === undefined)
          throw new InvalidOptionError(
            `${where}.idempotency`,
            'an idempotency from createIdempotency() (none here nor in the plugin)',
            undefined,
          );
        core = httpIdempotency({ ...base, ...own } as HttpIdempotencyOptions<FastifyRequest>);
      }
      appendRouteHook(route as RouteOptions, 'preHandler', decideHook(core));
      appendRouteHook(route as RouteOptions, 'onError', onErrorHook);
      appendRouteHook(route as RouteOptions, 'onSend', captureHook);
    });
  },
);

function decideHook(core: HttpIdempotency<FastifyRequest>) {
  return async function onceflowIdempotency(request: FastifyRequest, reply: FastifyReply) {
    let started!: () => void;
    const runStarted = new Promise<'run'>((resolve) => {
      started = () => resolve('run');
    });
    let settle!: Running['settle'];
    const captured = new Promise<RecordedResponse | undefined>((resolve, reject) => {
      settle = (outcome) => ('error' in outcome ? reject(outcome.error) : resolve(outcome.response));
    });
    const verdict = core.handle(request, requestInfo(request), request.body, () => {
      started();
      return captured;
    });
    // Either the core calls `run` (this is the first request: the handler runs next, and the
    // verdict comes once onSend has captured its reply), or it decides without running it.
    const first = await Promise.race([runStarted, verdict]);
    if (first === 'run') {
      let done = false;
      const running: Running = {
        verdict,
        settle(outcome) {
          if (done) return;
          done = true;
          settle(outcome);
        },
      };
      // Observed in onSend; this keeps a verdict nobody waits for (a hijacked reply) from being
      // an unhandled rejection.
      verdict.catch(() => {});
      (request as WithRunning)[RUNNING] = running;
      // A reply that never reaches onSend (`reply.hijack()`: the handler wrote it itself) is not
      // recorded: the key is released once it is sent. A client gone while the handler still
      // runs is not that case: Fastify still runs onSend when the handler returns, and the key
      // stays held until then, or a retry would run beside the first.
      reply.raw.once('close', () => {
        if (reply.raw.writableFinished || reply.sent) running.settle({ response: undefined });
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
  if (handlerError !== undefined) running.settle({ error: handlerError.value });
  else running.settle({ response: capture(reply, payload) });
  try {
    await running.verdict;
  } catch (err) {
    // The handler's own error released the key, as it should; anything else (a store failing
    // while recording) cannot change a reply whose effect happened: it is sent, and logged.
    if (handlerError === undefined || err !== handlerError.value)
      request.log.error({ err }, 'onceflow: the Idempotency-Key record failed; the reply is sent unrecorded');
  }
  return payload;
}

/** The reply as it leaves: undefined when its payload is a stream (not recorded). */
function capture(reply: FastifyReply, payload: unknown): RecordedResponse | undefined {
  let bytes: Buffer;
  if (payload === undefined || payload === null) bytes = Buffer.alloc(0);
  else if (typeof payload === 'string') bytes = Buffer.from(payload, 'utf8');
  else if (payload instanceof Uint8Array)
    bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  else return undefined;
  const headers: [string, string][] = [];
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value === undefined || !recordedHeader(name)) continue;
    const lower = name.toLowerCase();
    for (const one of Array.isArray(value) ? value : [value]) headers.push([lower, String(one)]);
  }
  return { status: reply.statusCode, headers, body: bytes.toString('base64') };
}

function sendReplay(reply: FastifyReply, response: RecordedResponse): FastifyReply {
  reply.code(response.status);
  const byName = new Map<string, string[]>();
  for (const [name, value] of response.headers) {
    const values = byName.get(name);
    if (values === undefined) byName.set(name, [value]);
    else values.push(value);
  }
  for (const [name, values] of byName) reply.header(name, values.length === 1 ? values[0] : values);
  reply.header(REPLAYED_HEADER, 'true');
  return reply.send(Buffer.from(response.body, 'base64'));
}
