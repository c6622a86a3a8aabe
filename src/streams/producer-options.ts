import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { LIMITS, optionWithinLimit } from '../core/limits.js';
import { type Emit, type Observer, observing } from '../core/observer.js';
import { isPlainObject, knownKeys, nonEmptyString, positiveInt } from '../core/validate.js';
import { boundedClient } from '../redis/bounded-client.js';
import { clientKeyPrefix } from '../redis/client-options.js';
import { type Durability, type DurabilityOptions, durabilityOption } from '../redis/durability.js';
import type { RedisLike } from '../redis/eval.js';
import { storeTimeout } from '../redis/redis-store.js';
import { keySlot } from '../redis/slot.js';
import { type RetryOptions, type RetryPolicy, retryPolicy } from './backoff.js';

/**
 * What a producer reports through its `observer` (metrics, logs): events of the part
 * `stream-producer` in onceflow's one event table (docs/observability.md).
 */
export type ProducerEvent =
  | {
      readonly part: 'stream-producer';
      readonly type: 'published';
      readonly id: string;
      readonly entryId: string;
      readonly duplicate: boolean;
    }
  | {
      readonly part: 'stream-producer';
      readonly type: 'retried';
      readonly attempt: number;
      readonly delayMs: number;
      readonly events: number;
      readonly error: unknown;
    }
  | {
      readonly part: 'stream-producer';
      readonly type: 'dead-lettered';
      readonly id: string;
      readonly reason: 'publish-failed' | 'terminal-error';
      readonly attempts: number;
      /** The dead letter's entry id; undefined when it could not be written (or dead letters are off). */
      readonly deadLetterId: string | undefined;
    }
  | {
      readonly part: 'stream-producer';
      readonly type: 'backlog-full';
      readonly events: number;
      readonly bytes: number;
    };

/** Options of {@link createStreamProducer}; `T` is the event's type (`publish` and `id` take it). */
export interface StreamProducerOptions<T = unknown> {
  /** Any client with `call` (ioredis `Redis` or `Cluster`). */
  client: RedisLike;
  /** The stream key. Its dedup record shares its hash slot (see `dedup`). */
  stream: string;
  /** Names the producer in dead letters' `origin` (`producer:<name>`). Default: the stream. */
  name?: string;
  /** Derives an event's idempotency id when `publish` is given none (a signature of its fields). */
  id?: (event: T) => string;
  /**
   * The dedup record: an id is answered with its first entry id while it is among the last
   * `maxIds` ids written and less than `window` old. Every producer of a stream must use the same.
   */
  dedup?: { window?: Duration; maxIds?: number };
  retry?: RetryOptions;
  /** Where failed events go (default `<stream>:dead`); `false`: nowhere (the publish rejects). */
  deadLetter?: { stream?: string } | false;
  /** Bounds of the events accepted and not yet written. */
  backlog?: { maxEvents?: number; maxBytes?: number };
  /** The largest encoded event (UTF-8 bytes of its jsonSerializer text). */
  maxEventBytes?: number;
  /** Aborting closes the producer, as `close()` does. */
  signal?: AbortSignal;
  /**
   * Receives the producer's events (see {@link ProducerEvent}); a throw is reported once and never
   * stops the producer, as every part's observer (docs/observability.md).
   */
  observer?: Observer<ProducerEvent>;
  /** The jitter's random source, [0, 1) (tests pass a fixed one). Default Math.random. */
  random?: () => number;
  /**
   * Replicas that must confirm a batch before its publishes resolve (WAIT after each script call;
   * as `createRedisStore`'s `durability`, docs/redis.md *Failover and durability*). A shortfall
   * with `onShort: 'throw'` is a retryable failure: the batch is tried again (each event answered
   * as a duplicate of its first write once that is confirmed) with the producer's retries.
   */
  durability?: DurabilityOptions;
  /**
   * How long each command may wait: for the client to be connected (held meanwhile, never queued
   * in the client), then for its reply. Past it the try fails as a lost connection does and is
   * retried: a batch that was never sent is known not to be in the stream, one sent with no reply
   * may be. Default `'10s'`, as `createRedisStore`'s. With `durability`, a batch's wait is this
   * plus `durability.timeout` (its WAIT rides in the same pipeline).
   */
  timeout?: Duration;
}

export interface ProducerConfig {
  /** The client as given: its status, its pipeline (durability). */
  readonly client: RedisLike;
  /** The client with every command's wait bounded by `timeoutMs` (boundedClient). */
  readonly redis: RedisLike;
  readonly timeoutMs: number;
  readonly stream: string;
  readonly idsKey: string;
  readonly orderKey: string;
  readonly origin: string;
  readonly windowMs: number;
  readonly maxIds: number;
  readonly retry: RetryPolicy;
  readonly deadStream: string | undefined;
  readonly maxEvents: number;
  readonly maxBytes: number;
  readonly maxEventBytes: number;
  readonly deriveId: ((event: unknown) => string) | undefined;
  readonly emit: Emit<ProducerEvent> | undefined;
  readonly random: () => number;
  readonly durability: Durability | undefined;
}

// 10 minutes: a publish is sent again by the producer's own retries within ~10 s (DEFAULT_RETRY),
// and by its caller after a crash once the process is restarted and replays what it had not seen
// acknowledged: a supervisor restarts a process within seconds to a few minutes. A replay later
// than the window is written again; raise it for slower recovery.
export const DEFAULT_DEDUP_WINDOW_MS = 600_000;
// 100 000 ids: the 10-minute window at ~166 publishes/s; each id costs ~150-200 bytes in the
// record (a hash field with its entry id, a list element with both), so ~20 MB at the bound. At a
// higher rate the count bound evicts ids younger than the window: raise maxIds to rate x window.
export const DEFAULT_DEDUP_MAX_IDS = 100_000;
// 10 000 events and 64 MiB: ~10 s of a 1 000 events/s producer, the default retry span, so a
// producer rides out a brief outage without refusing anything; the byte bound holds 64 events of
// the largest size. Past either, publish refuses at once (ERR_BACKLOG_FULL): memory stays bounded.
export const DEFAULT_BACKLOG_EVENTS = 10_000;
export const DEFAULT_BACKLOG_BYTES = 64 << 20;
// 1 MiB: stream entries are read whole by every consumer; a larger payload belongs in a blob
// store with its reference in the event.
export const DEFAULT_MAX_EVENT_BYTES = 1 << 20;

/**
 * The dedup record's keys: in the stream's hash slot, so one script touches them all on a cluster.
 * `keyPrefix`: the client's own (ioredis prepends it to every key it sends).
 */
export function dedupKeys(stream: string, keyPrefix = ''): [ids: string, order: string] {
  const open = stream.indexOf('{');
  const close = open === -1 ? -1 : stream.indexOf('}', open + 1);
  // A stream with a hash tag keeps it in the suffixed names; one without is wrapped whole, so
  // `{orders}:...` hashes as `orders` does. The suffixes differ, so no stream's keys are another's.
  // The whole key as sent includes the client's keyPrefix: `p:orders` hashes as `{p:orders}`.
  const base = close > open + 1 ? `${stream}:dedup` : `{${keyPrefix}${stream}}:stream-dedup`;
  return [`${base}:ids`, `${base}:order`];
}

// Every key of StreamProducerOptions: any other is a typo, refused by name (knownKeys).
const PRODUCER_OPTIONS = [
  'client',
  'stream',
  'name',
  'id',
  'dedup',
  'retry',
  'deadLetter',
  'backlog',
  'maxEventBytes',
  'signal',
  'observer',
  'random',
  'durability',
  'timeout',
] as const;

/** A nested options object (`{}` when not given): an object with only the `known` keys. */
function nested<T extends object>(option: string, value: T | undefined, known: readonly string[]): T {
  if (value === undefined) return {} as T;
  if (!isPlainObject(value)) throw new InvalidOptionError(option, `an object { ${known.join(', ')} }`, value);
  knownKeys(option, value, known);
  return value;
}

export function producerConfig<T>(options: StreamProducerOptions<T>): ProducerConfig {
  if (typeof options !== 'object' || options === null)
    throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, PRODUCER_OPTIONS);
  const client = options.client;
  if (typeof (client as { call?: unknown } | undefined)?.call !== 'function')
    throw new InvalidOptionError('client', 'a Redis client with `call` (ioredis Redis or Cluster)', client);
  const stream = optionWithinLimit('stream', nonEmptyString('stream', options.stream), 'ownerBytes');
  // The keys as Redis stores them start with the client's keyPrefix (refused when it would move
  // a hash tag): the slots compared are of those.
  const keyPrefix = clientKeyPrefix(client);
  const [idsKey, orderKey] = dedupKeys(stream, keyPrefix);
  if (keySlot(keyPrefix + idsKey) !== keySlot(keyPrefix + stream))
    throw new InvalidOptionError(
      'stream',
      'a key whose dedup record can share its hash slot (a `{hash tag}` or no braces)',
      stream,
    );
  const name = options.name === undefined ? stream : nonEmptyString('name', options.name);
  const dedup = nested('dedup', options.dedup, ['window', 'maxIds']);
  const windowMs = parseDuration(dedup.window ?? DEFAULT_DEDUP_WINDOW_MS, 'dedup.window');
  if (windowMs <= 0) throw new InvalidOptionError('dedup.window', 'a positive duration', dedup.window);
  const maxIds = positiveInt('dedup.maxIds', dedup.maxIds ?? DEFAULT_DEDUP_MAX_IDS);
  const backlog = nested('backlog', options.backlog, ['maxEvents', 'maxBytes']);
  let deadStream: string | undefined;
  if (options.deadLetter !== false) {
    const given = nested('deadLetter', options.deadLetter, ['stream']).stream;
    deadStream = given === undefined ? `${stream}:dead` : nonEmptyString('deadLetter.stream', given);
  }
  if (options.id !== undefined && typeof options.id !== 'function')
    throw new InvalidOptionError('id', 'a function (event) => string', options.id);
  const emit = observing<ProducerEvent>(options.observer, 'observer');
  if (options.random !== undefined && typeof options.random !== 'function')
    throw new InvalidOptionError('random', 'a function returning [0, 1)', options.random);
  const timeoutMs = storeTimeout(options.timeout);
  return {
    client,
    redis: boundedClient(client, timeoutMs),
    timeoutMs,
    stream,
    idsKey,
    orderKey,
    origin: `producer:${name}`,
    windowMs,
    maxIds,
    retry: retryPolicy(options.retry),
    deadStream,
    maxEvents: positiveInt('backlog.maxEvents', backlog.maxEvents ?? DEFAULT_BACKLOG_EVENTS),
    maxBytes: positiveInt('backlog.maxBytes', backlog.maxBytes ?? DEFAULT_BACKLOG_BYTES),
    maxEventBytes: positiveInt('maxEventBytes', options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES),
    deriveId: options.id as ((event: unknown) => string) | undefined,
    emit,
    random: options.random ?? Math.random,
    durability: durabilityOption(options.durability, client),
  };
}

/** The largest id, as LIMITS bounds a signature (an idempotency id is one). */
export const MAX_ID_BYTES = LIMITS.signatureBytes;
