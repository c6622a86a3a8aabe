import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { type Emit, type Observer, observing } from '../core/observer.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, knownKeys, nonEmptyString, positiveInt } from '../core/validate.js';
import { jsonSerializer, type Serializer } from '../idempotency/serializer.js';
import { boundedClient } from '../redis/bounded-client.js';
import { clientKeyPrefix } from '../redis/client-options.js';
import type { RedisLike } from '../redis/eval.js';
import { storeTimeout } from '../redis/redis-store.js';
import { keySlot } from '../redis/slot.js';
import type { Delivery } from './delivery.js';
import type { StreamLedgerOptions } from './ledger-path.js';
import { preCheckOption, type StreamPreCheck, type StreamPreCheckEvent } from './pre-check.js';

/**
 * The client a consumer needs: `call` for every command, and `duplicate()` for the connection of
 * its own that its `XREADGROUP ... BLOCK` holds (a blocked connection answers nothing else), unless
 * `reader` is given. ioredis `Redis` and `Cluster` have both.
 */
export interface StreamClient extends RedisLike {
  duplicate?(): StreamClient;
  disconnect?(): void;
  on?(event: 'error', listener: (err: unknown) => void): unknown;
}

/**
 * What a consumer reports as it works, through its `observer`: events of the part
 * `stream-consumer` in onceflow's one event table (docs/observability.md).
 */
export type StreamConsumerEvent =
  | {
      readonly part: 'stream-consumer';
      readonly type: 'handler-error';
      readonly id: string;
      readonly deliveries: number;
      readonly error: unknown;
    }
  /** This consumer's delivery was reclaimed (or acked) elsewhere: its ack or effect was refused. */
  | {
      readonly part: 'stream-consumer';
      readonly type: 'fenced';
      readonly id: string;
      readonly deliveries: number;
    }
  | {
      readonly part: 'stream-consumer';
      readonly type: 'dead-letter';
      readonly id: string;
      readonly reason: 'max-deliveries' | 'terminal-error' | 'ledger-stale' | 'handler-error';
      readonly deliveries: number;
    }
  /**
   * A ledger booking's outcome (`duplicate`: booked before; `stale`: the window and the journal
   * could not tell, dead-lettered). An entry the window answers stale is resolved from the owner's
   * journal first: `applied` or `duplicate` then.
   */
  | {
      readonly part: 'stream-consumer';
      readonly type: 'applied';
      readonly id: string;
      readonly outcome: 'applied' | 'duplicate' | 'stale';
      readonly seq: number | undefined;
    }
  /** Pending entries that were deleted from the stream (trimmed) before anyone acked them. */
  | { readonly part: 'stream-consumer'; readonly type: 'deleted'; readonly ids: readonly string[] }
  /**
   * Entries handed to the handler or the ledger path since the last report (one per read, claim
   * page or read-back of spilled entries): reclaimed ones and redeliveries included.
   */
  | { readonly part: 'stream-consumer'; readonly type: 'delivered'; readonly count: number }
  /** Entries whose handler or booking ran and whose XACK went through (dead letters: `dead-letter`). */
  | { readonly part: 'stream-consumer'; readonly type: 'acked'; readonly count: number }
  /** Entries taken over by a claim (XAUTOCLAIM): another consumer's, or ones this consumer let go. */
  | { readonly part: 'stream-consumer'; readonly type: 'reclaimed'; readonly count: number }
  /**
   * The group's backlog, every `statsInterval`: `pending`, entries delivered to any consumer of the
   * group and not acked yet; `lag`, entries of the stream not delivered to the group yet (XINFO
   * GROUPS, Redis 7.0+), undefined when Redis cannot tell (older Redis, or entries deleted in the
   * group's range).
   */
  | {
      readonly part: 'stream-consumer';
      readonly type: 'lag';
      readonly pending: number;
      readonly lag: number | undefined;
    }
  /**
   * One pre-check of an entry with an event id (`preCheck` option): `skipped` (the filter never
   * saw the id: the handler runs, no read), `read-seen` (acked without the handler), `read-unseen`.
   */
  | StreamPreCheckEvent
  /** A Redis call of the consumer failed (it goes on: reads are retried, entries redelivered). */
  | {
      readonly part: 'stream-consumer';
      readonly type: 'error';
      readonly operation: 'read' | 'ack' | 'claim' | 'touch' | 'group' | 'stats';
      readonly error: unknown;
    };

/** Options of {@link createStreamConsumer}. */
export interface StreamConsumerOptions<E = unknown> {
  /** An ioredis `Redis` or `Cluster` (see {@link StreamClient}). Not closed by the consumer. */
  client: StreamClient;
  /** The connection for `XREADGROUP ... BLOCK`. Default `client.duplicate()` (closed when run() ends). */
  reader?: StreamClient;
  stream: string;
  group: string;
  /** This consumer's name in the group: stable across restarts of one process slot. */
  consumer: string;
  /** The effect of an entry; a throw leaves it pending (delivered again after `claimIdle`). */
  handler?: (delivery: Delivery<E>) => unknown;
  /** The exactly-once path: each entry's ledger booking and its XACK in one script (instead of `handler`). */
  ledger?: StreamLedgerOptions<E>;
  /**
   * Handlers running at once (different keys). Default 16. The ledger path runs no handler: it
   * books up to `batch` entries per script call, at most 2 x `batch` entries at once (in as many
   * calls as they make batches).
   */
  concurrency?: number;
  /** Pending entries idle longer than this are reclaimed (XAUTOCLAIM). Default `'30s'`. */
  claimIdle?: Duration;
  /**
   * Handler runs after which an entry is dead-lettered instead of run again. Default 5. Counted per
   * entry beside the stream (`<stream>:attempts`), not by Redis's delivery count alone, which also
   * counts deliveries no handler started (entries a killed consumer held while they waited).
   */
  maxDeliveries?: number;
  /** The ordering key of an entry: a key's entries run one at a time, in stream order. Default: none. */
  key?: (delivery: Delivery<E>) => string;
  /** How long one XREADGROUP waits for new entries. Default `'2s'`. */
  block?: Duration;
  /** Entries per XREADGROUP (COUNT), and on the ledger path per booking script call. Default 64. */
  batch?: number;
  /** The dead-letter stream. Default `<stream>:dead` (same hash slot as the stream on Cluster). */
  deadLetter?: { stream?: string };
  /** Where a group created by the consumer starts (`XGROUP CREATE ... <from> MKSTREAM`). Default `'0'`. */
  from?: string;
  /** Decodes an entry's field `e`. Default `jsonSerializer` (bigints and Dates round-trip). */
  serializer?: Serializer;
  /** Aborting it stops the reads; run() resolves once the work in flight is done and acked. */
  signal: AbortSignal;
  /**
   * Receives the consumer's events (see {@link StreamConsumerEvent}); a throw is reported once
   * and never stops the consumer, as every part's observer (docs/observability.md).
   */
  observer?: Observer<StreamConsumerEvent>;
  /**
   * How long each command may wait: for the client to be connected (held meanwhile, never queued
   * in the client), then for its reply; a blocking read waits `block` longer. Past it the call
   * fails (reported as an `error` event; reads are retried, entries redelivered after
   * `claimIdle`); `run()` rejects with `ERR_STORE` when the group cannot be created at start.
   * Default `'10s'`, as `createRedisStore`'s.
   */
  timeout?: Duration;
  /**
   * How often the group's pending count and lag are read (one script call) and reported as a
   * `lag` event: the first report one interval after the start. Default `'5s'`; `0` for none;
   * otherwise at least 100 ms and at most 2^31 - 1 ms.
   */
  statsInterval?: Duration;
  /**
   * A Bloom pre-check before the handler, for entries with an event id (field `i`): see
   * {@link StreamPreCheck} and docs/pre-checks.md. Handler path only. None by default.
   */
  preCheck?: StreamPreCheck<E>;
}

export interface ResolvedOptions<E> {
  /** The client with every command's wait bounded by `timeoutMs` (boundedClient). */
  readonly client: RedisLike & { readonly status?: unknown; readonly isCluster?: unknown };
  /** The client as given: `duplicate()`, its events. */
  readonly raw: StreamClient;
  readonly timeoutMs: number;
  readonly reader: StreamClient | undefined;
  readonly stream: string;
  readonly deadStream: string;
  /** The hash of handler runs counted per redelivered entry (`<stream>:attempts`). */
  readonly attemptsKey: string;
  readonly group: string;
  readonly consumer: string;
  readonly handler: ((delivery: Delivery<E>) => unknown) | undefined;
  readonly concurrency: number;
  readonly claimIdleMs: number;
  readonly maxDeliveries: number;
  readonly key: ((delivery: Delivery<E>) => string) | undefined;
  readonly blockMs: number;
  readonly batch: number;
  readonly from: string;
  readonly serializer: Serializer;
  readonly signal: AbortSignal;
  readonly emit: Emit<StreamConsumerEvent> | undefined;
  readonly cluster: boolean;
  /** 0: no `lag` events. */
  readonly statsIntervalMs: number;
  readonly preCheck: StreamPreCheck<E> | undefined;
}

// Each report is a round trip on the main connection: ten a second per consumer is already far
// more often than a dashboard scraping every 15 s can show.
const MIN_STATS_INTERVAL_MS = 100;

// Every key of StreamConsumerOptions: any other is a typo, refused by name (knownKeys).
const CONSUMER_OPTIONS = [
  'client',
  'reader',
  'stream',
  'group',
  'consumer',
  'handler',
  'ledger',
  'concurrency',
  'claimIdle',
  'maxDeliveries',
  'key',
  'block',
  'batch',
  'deadLetter',
  'from',
  'serializer',
  'signal',
  'observer',
  'timeout',
  'statsInterval',
  'preCheck',
] as const;

/** The options checked once, with their defaults (p-queue style: one assert per option). */
export function resolveOptions<E>(options: StreamConsumerOptions<E>): ResolvedOptions<E> {
  // Longer than most functions: one check per option, in the order they are documented, each a
  // few lines; split, the order in which errors are reported would be spread over several places.
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, CONSUMER_OPTIONS);
  const { client } = options;
  if (typeof (client as RedisLike | undefined)?.call !== 'function') {
    throw new InvalidOptionError('client', 'an ioredis Redis or Cluster client (with call())', client);
  }
  const reader = options.reader;
  if (reader !== undefined && typeof reader?.call !== 'function') {
    throw new InvalidOptionError('reader', 'a client of its own (with call())', reader);
  }
  if (reader === undefined && typeof client.duplicate !== 'function') {
    throw new InvalidOptionError(
      'reader',
      'a connection of its own for XREADGROUP BLOCK when `client` has no duplicate()',
      reader,
    );
  }
  // ioredis prepends the client's keyPrefix to every key it sends (refused when it would move a
  // hash tag): the reader must prefix as the client does, or it reads another stream.
  const keyPrefix = clientKeyPrefix(client);
  if (reader !== undefined && clientKeyPrefix(reader) !== keyPrefix) {
    throw new InvalidOptionError(
      'reader',
      `a client with the keyPrefix of \`client\` (${JSON.stringify(keyPrefix)})`,
      (reader as { options?: { keyPrefix?: unknown } }).options?.keyPrefix,
    );
  }
  const slot = (key: string) => keySlot(keyPrefix + key);
  const stream = nonEmptyString('stream', options.stream);
  const group = nonEmptyString('group', options.group);
  const consumer = nonEmptyString('consumer', options.consumer);
  const hasHandler = options.handler !== undefined;
  if (hasHandler === (options.ledger !== undefined)) {
    throw new InvalidOptionError('handler', 'exactly one of `handler` and `ledger`', options.handler);
  }
  if (hasHandler && typeof options.handler !== 'function') {
    throw new InvalidOptionError('handler', 'a function (delivery) => unknown', options.handler);
  }
  if (options.key !== undefined && typeof options.key !== 'function') {
    throw new InvalidOptionError('key', 'a function (delivery) => string', options.key);
  }
  if (!(options.signal instanceof AbortSignal)) {
    throw new InvalidOptionError('signal', 'an AbortSignal (run() resolves once it aborts)', options.signal);
  }
  const emit = observing<StreamConsumerEvent>(options.observer, 'observer');
  const serializer = options.serializer ?? jsonSerializer;
  if (typeof serializer?.deserialize !== 'function') {
    throw new InvalidOptionError('serializer', 'a Serializer (with deserialize())', serializer);
  }
  if (options.deadLetter !== undefined && !isPlainObject(options.deadLetter)) {
    throw new InvalidOptionError(
      'deadLetter',
      'an object like { stream: "orders:dead" }',
      options.deadLetter,
    );
  }
  if (options.deadLetter !== undefined) knownKeys('deadLetter', options.deadLetter, ['stream']);
  const deadStream =
    options.deadLetter?.stream === undefined
      ? `${stream}:dead`
      : nonEmptyString('deadLetter.stream', options.deadLetter.stream);
  const cluster = (client as { isCluster?: unknown }).isCluster === true;
  // A dead letter and the entry's XACK are one script: on Cluster both keys must share a slot.
  if (cluster && slot(deadStream) !== slot(stream)) {
    throw new InvalidOptionError(
      'deadLetter.stream',
      'a stream in the same hash slot as `stream` on Redis Cluster (give both one {hash tag}: `{orders}` and `{orders}:dead`)',
      deadStream,
    );
  }
  // Runs counted per redelivered entry, beside the stream: the ack scripts clear an entry's count
  // with its XACK, so on Cluster it must share the stream's slot too.
  const attemptsKey = `${stream}:attempts`;
  if (cluster && slot(attemptsKey) !== slot(stream)) {
    throw new InvalidOptionError(
      'stream',
      'a stream name with a {hash tag} on Redis Cluster (e.g. `{orders}`), so that `<stream>:attempts` shares its slot',
      stream,
    );
  }
  const claimIdleMs = parseDuration(options.claimIdle ?? '30s', 'claimIdle');
  // The claim loop runs every claimIdle / 3 (see consumer.ts): below 30 ms it would spin.
  if (claimIdleMs < 30) throw new InvalidOptionError('claimIdle', 'at least 30 ms', options.claimIdle);
  const blockMs = parseDuration(options.block ?? '2s', 'block');
  // BLOCK 0 waits forever: a shutdown could then never end on a client that cannot unblock it.
  if (blockMs < 1) throw new InvalidOptionError('block', 'at least 1 ms', options.block);
  const from = options.from ?? '0';
  if (typeof from !== 'string' || !/^(\$|0|\d+-\d+|\d+)$/.test(from)) {
    throw new InvalidOptionError('from', "a stream id, '0' or '$'", from);
  }
  const timeoutMs = storeTimeout(options.timeout);
  const statsIntervalMs = timerDuration('statsInterval', options.statsInterval ?? '5s');
  if (statsIntervalMs > 0 && statsIntervalMs < MIN_STATS_INTERVAL_MS) {
    throw new InvalidOptionError('statsInterval', '0 (no reports) or at least 100 ms', options.statsInterval);
  }
  return {
    client: boundedClient(client, timeoutMs),
    raw: client,
    timeoutMs,
    reader,
    stream,
    deadStream,
    attemptsKey,
    group,
    consumer,
    handler: options.handler,
    concurrency: positiveInt('concurrency', options.concurrency ?? 16),
    claimIdleMs,
    maxDeliveries: positiveInt('maxDeliveries', options.maxDeliveries ?? 5),
    key: options.key,
    blockMs,
    batch: positiveInt('batch', options.batch ?? 64),
    from,
    serializer,
    signal: options.signal,
    emit,
    cluster,
    statsIntervalMs,
    preCheck: preCheckOption<E>(options.preCheck, options.ledger !== undefined),
  };
}
