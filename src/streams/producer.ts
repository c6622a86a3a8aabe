import { ClosedError, InvalidArgumentError, isOnceflowError } from '../core/errors.js';
import { withinLimit } from '../core/limits.js';
import { isPlainObject, knownKeys, nonEmptyStringArg } from '../core/validate.js';
import { jsonSerializer } from '../idempotency/serializer.js';
import { evalDurable } from '../redis/durability.js';
import { evalScript } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';
import { isClosedClient } from '../redis/store-error.js';
import { backoffDelay } from './backoff.js';
import type { DeadLetterReason } from './dead-letter.js';
import { BacklogFullError } from './producer-errors.js';
import { giveUp as giveUpItem, type ProducerItem as Item } from './producer-give-up.js';
import {
  type ProducerConfig,
  type ProducerEvent,
  producerConfig,
  type StreamProducerOptions,
} from './producer-options.js';
import { classifyStreamError } from './stream-errors.js';

/** A producer of one stream of events of type `T`: see {@link createStreamProducer}. */
export interface StreamProducer<T = unknown> {
  /**
   * Appends `event` (a JSON value; bigints and Dates round-trip) to the stream once per id:
   * resolves to its entry id, the first write's when the id was written before within the dedup
   * window. `options.id` is the event's idempotency id (a signature of its own fields); without
   * it the producer's `id(event)` derives it. Rejects with ERR_BACKLOG_FULL at once when the
   * backlog is full, ERR_PUBLISH_FAILED when it gave up (the event is in the dead-letter stream),
   * ERR_DEAD_LETTER_FAILED when the dead letter failed too, ERR_CLOSED after close.
   */
  publish(event: T, options?: { id?: string }): Promise<string>;
  /** Events accepted and not settled yet, and their bytes. */
  backlog(): { events: number; bytes: number };
  /**
   * Stops accepting publishes (they reject with ERR_CLOSED) and resolves once every event
   * accepted before has settled: written, or given up as publish does (tries, then dead letter).
   * Nothing accepted is dropped unreported. Does not close the client.
   */
  close(): Promise<void>;
}

// At most 256 events per script call: an event costs ~4 redis.call (HGET, XADD, HSET, RPUSH) of
// ~1-2 µs each on a local Redis, so a full batch holds the server ~1.5-2 ms at most, the same
// order as a ledger batch: other clients wait no longer than that.
export const PRODUCER_MAX_BATCH = 256;
// At most 1 MiB of arguments per call (one event larger than that goes alone): copying and parsing
// it takes ~0.1-1 ms, and a huge command would hit Redis's client-query-buffer-limit.
export const PRODUCER_MAX_BATCH_BYTES = 1 << 20;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * An idempotent producer of a Redis stream (DESIGN §3.8). Each publish is one event of a batch:
 * the publishes of one event-loop turn (and those made while a batch is in flight) go in one call
 * of stream-publish.lua, which checks each id against the stream's dedup record and XADDs the new
 * ones in the same atomic step. A call whose reply was lost, sent again by the client or by the
 * producer's retry, answers the first entry ids and writes nothing twice.
 *
 * Order: one batch is in flight at a time, and a batch is always the oldest events still queued;
 * a failed batch is tried again (with newer events appended up to the batch bound) before anything
 * after it, so the events of one producer are in the stream in publish order, also across retries
 * (an event given up on is missing from the stream, never moved).
 *
 * The dedup is the script on every server, Redis 8.6's idempotent XADD (`IDMP`, which
 * `streamFeatures(client).addIdempotent` detects) included: IDMP keeps at most 10 000 ids per
 * producer id for at most 86 400 s (the script: any `dedup.maxIds` and `window`), `XCFGSET` clears
 * every recorded id of the stream when its bounds change (two producers configured differently
 * would erase each other's record), and its record is per producer id, where a self-contained id
 * must dedup across producers.
 *
 * Retries: exponential backoff with full jitter (`retry`), counted per event; a retryable failure
 * (connection, timeout, LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, READONLY) is tried again
 * until the event's tries run out; a terminal one (WRONGTYPE, NOPERM, NOAUTH, OOM, a script
 * error, a closed client) ends at once. Then the event is written to the dead-letter stream
 * (reason, attempts, first and last error, origin, event, id) and its publish rejects.
 *
 * Backlog: events accepted and not settled (queued or in flight) are bounded by `backlog.maxEvents`
 * and `backlog.maxBytes`; while Redis is down they wait there, and a publish past either bound
 * rejects at once with ERR_BACKLOG_FULL.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createStreamProducer } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const stream = `example:{settlements-${process.pid}}`; // its dedup record shares the {tag}
 * const producer = createStreamProducer({ client: redis, stream });
 * const entryId = await producer.publish({ player: 'p1', net: -300n }, { id: 'lobby-7|42|p1' });
 * // Sent again (a retry after a lost reply, another process replaying): the first entry id.
 * (await producer.publish({ player: 'p1', net: -300n }, { id: 'lobby-7|42|p1' })) === entryId; // true
 * await redis.xlen(stream); // 1
 * await producer.close();
 * await redis.del(stream, `${stream}:dedup:ids`, `${stream}:dedup:order`);
 * redis.disconnect();
 * ```
 */
export function createStreamProducer<T = unknown>(options: StreamProducerOptions<T>): StreamProducer<T> {
  // Longer than most functions: one closure over the backlog (queue, head, bytes) and the pump's
  // state (running, idle), which publish, the pump and close share; the batch's tries and the give-up
  // path are functions of their own below and in producer-give-up.ts.
  const config = producerConfig(options);
  const queue: Item[] = [];
  let head = 0; // queue[head..] are unsettled; the prefix is dropped in chunks
  let bytes = 0;
  let running = false;
  let closed = false;
  let idle: Promise<void> = Promise.resolve();
  let markIdle: () => void = () => {};
  // A throwing observer must not stop the pump (the events behind would never settle): observing()
  // catches and reports it.
  const emit = config.emit;

  const pending = () => queue.length - head;

  const settle = (item: Item) => {
    bytes -= item.bytes;
  };

  const start = () => {
    if (running) return;
    running = true;
    idle = new Promise((resolve) => {
      markIdle = resolve;
    });
    // A turn of the event loop first: the publishes of this turn join the first batch.
    setImmediate(() => void pump());
  };

  async function pump(): Promise<void> {
    try {
      while (pending() > 0) {
        const batch = takeBatch(queue, head);
        await runBatch(sender, batch);
        // Drop settled items from the front (every one of batch is settled by runBatch).
        head += batch.length;
        if (head > 1024 && head * 2 > queue.length) {
          queue.splice(0, head);
          head = 0;
        }
      }
    } finally {
      running = false;
      markIdle();
      if (pending() > 0) start();
    }
  }

  // The event leaves the backlog, then is dead-lettered (or rejected without a dead-letter stream).
  const giveUp = (item: Item, reason: DeadLetterReason): Promise<void> => {
    settle(item);
    return giveUpItem(config, emit, item, reason);
  };
  const sender: Sender = { config, emit, settle, giveUp };

  const close = async () => {
    closed = true;
    await idle;
    while (running || pending() > 0) await idle;
  };
  if (options.signal !== undefined) {
    if (options.signal.aborted) closed = true;
    else options.signal.addEventListener('abort', () => void close(), { once: true });
  }

  return {
    publish(event: T, publishOptions?: { id?: string }): Promise<string> {
      try {
        if (closed) throw new ClosedError('stream producer');
        const { id, text, size } = encodeEvent(config, event, publishOptions);
        const itemBytes = size + Buffer.byteLength(id, 'utf8');
        if (pending() >= config.maxEvents || bytes + itemBytes > config.maxBytes) {
          emit?.({ part: 'stream-producer', type: 'backlog-full', events: pending(), bytes });
          throw new BacklogFullError(pending(), bytes, config.maxEvents, config.maxBytes);
        }
        return new Promise<string>((resolve, reject) => {
          queue.push({
            id,
            text,
            bytes: itemBytes,
            tries: 0,
            firstError: undefined,
            lastError: undefined,
            mayBeWritten: false,
            resolve,
            reject,
          });
          bytes += itemBytes;
          start();
        });
      } catch (err) {
        return Promise.reject(err);
      }
    },
    backlog: () => ({ events: pending(), bytes }),
    close,
  };
}

/** The next batch: the backlog's oldest events from `head`, at most PRODUCER_MAX_BATCH(_BYTES). */
function takeBatch(queue: readonly Item[], head: number): Item[] {
  const batch: Item[] = [];
  let size = 0;
  for (let i = head; i < queue.length && batch.length < PRODUCER_MAX_BATCH; i++) {
    const item = queue[i] as Item;
    if (batch.length > 0 && size + item.bytes > PRODUCER_MAX_BATCH_BYTES) break;
    batch.push(item);
    size += item.bytes;
  }
  return batch;
}

/** What a batch's tries need of their producer. */
interface Sender {
  readonly config: ProducerConfig;
  readonly emit: ((event: ProducerEvent) => void) | undefined;
  /** The event leaves the backlog's bytes. */
  settle(item: Item): void;
  giveUp(item: Item, reason: DeadLetterReason): Promise<void>;
}

// Tries `batch` until each event is written or given up. The batch keeps its events across
// tries (never a newer event before an older one); an event whose tries ran out leaves it.
async function runBatch(sender: Sender, batch: Item[]): Promise<void> {
  const { config, emit } = sender;
  let live = batch;
  for (;;) {
    const closedClient = isClosedClient(config.client as object);
    try {
      const reply = await send(config, live);
      for (const [i, item] of live.entries()) {
        const entryId = String(reply[2 * i]);
        sender.settle(item);
        item.resolve(entryId);
        emit?.({
          part: 'stream-producer',
          type: 'published',
          id: item.id,
          entryId,
          duplicate: reply[2 * i + 1] === 0,
        });
      }
      return;
    } catch (err) {
      const failure = classifyStreamError(err, closedClient);
      for (const item of live) {
        item.tries++;
        item.firstError ??= err;
        item.lastError = err;
        if (failure.outcome === 'unknown') item.mayBeWritten = true;
      }
      if (!failure.retryable) {
        await terminal(sender, live);
        return;
      }
      const done = live.filter((item) => item.tries >= config.retry.attempts);
      for (const item of done) await sender.giveUp(item, 'publish-failed');
      live = live.filter((item) => item.tries < config.retry.attempts);
      if (live.length === 0) return;
      const attempt = Math.min(...live.map((item) => item.tries));
      const delayMs = backoffDelay(config.retry, attempt, config.random);
      emit?.({ part: 'stream-producer', type: 'retried', attempt, delayMs, events: live.length, error: err });
      await sleep(delayMs);
    }
  }
}

// A terminal failure of a batch of several events: each is sent alone once, so only the ones
// that fail are dead-lettered (a script stops at its failing event with the earlier ones written;
// sent again, those answer their entry ids as duplicates).
async function terminal(sender: Sender, live: Item[]): Promise<void> {
  const { config, emit } = sender;
  if (live.length === 1) {
    await sender.giveUp(live[0] as Item, 'terminal-error');
    return;
  }
  for (const item of live) {
    try {
      const reply = await send(config, [item]);
      sender.settle(item);
      item.resolve(String(reply[0]));
      emit?.({
        part: 'stream-producer',
        type: 'published',
        id: item.id,
        entryId: String(reply[0]),
        duplicate: reply[1] === 0,
      });
    } catch (alone) {
      item.tries++;
      item.lastError = alone;
      const failure = classifyStreamError(alone, isClosedClient(config.client as object));
      if (failure.outcome === 'unknown') item.mayBeWritten = true;
      await sender.giveUp(item, failure.retryable ? 'publish-failed' : 'terminal-error');
    }
  }
}

async function send(config: ProducerConfig, items: readonly Item[]): Promise<unknown[]> {
  const args: string[] = new Array(2 + 2 * items.length);
  args[0] = String(config.windowMs);
  args[1] = String(config.maxIds);
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as Item;
    args[2 + 2 * i] = item.id;
    args[3 + 2 * i] = item.text;
  }
  const keys = [config.stream, config.idsKey, config.orderKey];
  const reply =
    config.durability === undefined
      ? await evalScript(config.redis, scripts.streamPublish, keys, args)
      : await durableSend(config, keys, args, items.length);
  if (!Array.isArray(reply) || reply.length !== 2 * items.length)
    throw new Error(
      `stream-publish answered ${JSON.stringify(reply)?.slice(0, 200)} to ${items.length} events`,
    );
  return reply;
}

// With `durability`: once enough replicas confirmed it, else a retryable failure. The script and
// its WAIT are one pipeline of the bounded client (pipelineOf): held until the client is
// connected, and its reply waited for at most the timeout plus WAIT's, as every store call is.
function durableSend(
  config: ProducerConfig,
  keys: string[],
  args: string[],
  events: number,
): Promise<unknown> {
  return evalDurable(config.redis, config.durability, 'publish', events, scripts.streamPublish, keys, args);
}

/**
 * A publish's event and options, checked: its id (given, or derived by the producer's `id`), its
 * JSON text and that text's size in bytes. Refused by name before anything is queued.
 */
function encodeEvent<T>(
  config: ProducerConfig,
  event: T,
  publishOptions: { id?: string } | undefined,
): { id: string; text: string; size: number } {
  if (publishOptions !== undefined) {
    if (!isPlainObject(publishOptions))
      throw new InvalidArgumentError('options', 'an object { id }', publishOptions);
    knownKeys('options', publishOptions, ['id']);
  }
  const given = publishOptions?.id;
  let id: string;
  if (given !== undefined) id = nonEmptyStringArg('options.id', given);
  else if (config.deriveId !== undefined) id = nonEmptyStringArg('id(event)', config.deriveId(event));
  else
    throw new InvalidArgumentError(
      'options.id',
      "the event's idempotency id (a signature of its fields), or an `id(event)` option on the producer",
      given,
    );
  withinLimit('options.id', id, 'signatureBytes');
  let text: string;
  try {
    text = jsonSerializer.serialize(event);
  } catch (err) {
    // A value JSON cannot write (a cycle: JSON.stringify's TypeError; a symbol, a function:
    // the serializer's own refusal) is bad input, refused by name before anything is queued.
    if (isOnceflowError(err, 'ERR_INVALID_ARGUMENT') || err instanceof TypeError)
      throw new InvalidArgumentError(
        'event',
        `a JSON value without cycles (bigints and Dates allowed)${err instanceof TypeError ? `: ${err.message.split('\n')[0]}` : ''}`,
        event,
      );
    throw err;
  }
  const size = Buffer.byteLength(text, 'utf8');
  if (size > config.maxEventBytes)
    throw new InvalidArgumentError(
      'event',
      `at most ${config.maxEventBytes} bytes encoded (\`maxEventBytes\`; this one has ${size})`,
      event,
    );
  return { id, text, size };
}
