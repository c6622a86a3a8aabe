import { ClosedError, ErrorCode, isOnceflowError } from '../core/errors.js';
import { LruMap } from '../core/lru-map.js';
import { boundedClient } from '../redis/bounded-client.js';
import { evalScript } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';
import { isClosedClient, redisStoreError } from '../redis/store-error.js';
import {
  type ResolvedOptions,
  resolveOptions,
  type StreamClient,
  type StreamConsumerEvent,
  type StreamConsumerOptions,
} from './consumer-options.js';
import { type Delivery, decodeDelivery, errorText, parseEntries, type RawEntry } from './delivery.js';
import { createKeyScheduler, type ScheduledJob } from './key-scheduler.js';
import { type ApplyAckItem, type ApplyAckReply, createLedgerPath, type LedgerPath } from './ledger-path.js';
import { claimLoop, type Held } from './reclaim.js';
import { createSpill, type SpillPass } from './spill.js';
import { createTickBatcher } from './tick-batcher.js';

export type { StreamClient, StreamConsumerEvent, StreamConsumerOptions } from './consumer-options.js';
export type { Delivery } from './delivery.js';
export type { StreamLedgerOptions } from './ledger-path.js';

/** Counts of what a consumer did, since it was made. */
export interface StreamConsumerStats {
  delivered: number;
  acked: number;
  failed: number;
  deadLettered: number;
  fenced: number;
}

/** A consumer of one stream in one group (see {@link createStreamConsumer}). */
export interface StreamConsumer {
  /** Reads, runs and acks until `signal` aborts; resolves once the work in flight is done and acked. */
  run(): Promise<void>;
  readonly stats: Readonly<StreamConsumerStats>;
}

// At most this many entries per ack / apply-ack script: each costs Redis an XPENDING (apply-ack:
// its share of one XPENDING range) and its share of one XACK (~2-4 µs; a booking ~8-20 µs,
// MAX_BATCH in src/redis/ledger-ops.ts), so 128 hold the server ~0.5-3 ms at most, as a batch of
// ledger applies does.
const MAX_SCRIPT_BATCH = 128;
// Errors kept per entry (first and last message) for its dead letter: one per failing entry held
// or recently failed; 10 000 x ~2 KiB = ~20 MB at most, and a forgotten one leaves the fields empty.
const ERRORS_KEPT = 10_000;
// A failed read waits 50 ms, doubling to 2 s: long enough not to spin on a Redis that is down,
// short enough that a restart is noticed within a couple of seconds.
const READ_RETRY_MS = 50;
const READ_RETRY_MAX_MS = 2000;
// Spilled keys tracked at most (one key and one id each: ~100 B, ~100 KB in all). A key is spilled
// only while it holds its cap (at most maxHeld / keyCap <= 2 keys at once) or while its entries
// are read back, so this is reached only by a burst of keys blocked in turn; past it a key at its
// cap is held beyond its cap (never beyond maxHeld) until one drains.
const SPILLED_KEYS_MAX = 1024;

/**
 * A Redis Streams consumer in a consumer group: `XREADGROUP ... BLOCK` on a connection of its own,
 * `XACK` after the handler resolves, reclaim of entries idle longer than `claimIdle` (`XAUTOCLAIM`:
 * a crashed consumer's entries are picked up), dead letters by delivery count, per-key ordered
 * parallelism, a fencing token per delivery (a consumer whose delivery was reclaimed cannot ack it),
 * and, with `ledger`, the ledger booking and the XACK in one script (exactly once end to end).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createStreamConsumer } from 'onceflow/streams';
 * const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const stream = `example:${process.pid}:orders`;
 * await client.xadd(stream, '*', 'e', JSON.stringify({ order: 1 }), 'i', 'order-1');
 * const done = new AbortController();
 * const seen: unknown[] = [];
 * const consumer = createStreamConsumer({
 *   client, stream, group: 'billing', consumer: 'billing-1', signal: done.signal, block: '100ms',
 *   handler: async ({ event }) => {
 *     seen.push(event);
 *     done.abort(); // one entry is enough for the example
 *   },
 * });
 * await consumer.run();
 * seen; // [{ order: 1 }]
 * consumer.stats.acked; // 1
 * await client.del(stream, `${stream}:dead`);
 * await client.quit();
 * ```
 */
export function createStreamConsumer<E = unknown>(options: StreamConsumerOptions<E>): StreamConsumer {
  const o = resolveOptions(options);
  const ledger =
    options.ledger === undefined
      ? undefined
      : createLedgerPath(
          options.ledger,
          o.client,
          o.raw,
          o.stream,
          o.deadStream,
          o.attemptsKey,
          o.group,
          o.consumer,
          // As runConsumer's maxHeld: what the consumer holds at most.
          o.concurrency + o.batch,
        );
  const stats: StreamConsumerStats = { delivered: 0, acked: 0, failed: 0, deadLettered: 0, fenced: 0 };
  let started = false;
  return {
    get stats() {
      return stats;
    },
    run() {
      if (started) return Promise.reject(new ClosedError('stream consumer (run() is called once)'));
      started = true;
      return runConsumer(o, ledger, stats);
    },
  };
}

async function runConsumer<E>(
  o: ResolvedOptions<E>,
  ledger: LedgerPath<E> | undefined,
  stats: StreamConsumerStats,
): Promise<void> {
  const { client, stream, group, consumer, signal } = o;
  const scheduler = createKeyScheduler<Held<E>>(o.concurrency);
  // Room for one full read on top of what runs: the next batch is at hand when a key frees up.
  const maxHeld = o.concurrency + o.batch;
  // At most max(batch, concurrency) entries held per key, always less than maxHeld (both are at
  // least 1): a key whose head failed waits for it (claimIdle, up to maxDeliveries times), and its
  // newer entries never take every place; the rest stay for other keys and for reclaims. Not
  // `batch` alone: with a small batch, a key holding `batch` entries would be spilled while
  // `concurrency` allows far more keys at once. Without `key` every entry is its own key: no cap.
  const keyCap = o.key === undefined ? Number.POSITIVE_INFINITY : Math.max(o.batch, o.concurrency);
  // A read waits for a quarter of a key's cap (at most one batch, at least one entry) to be free
  // again, and never for more than one key at its cap leaves (maxHeld - keyCap = min(batch,
  // concurrency)): a key that stays near its cap is read in quarters, not one round trip per entry.
  const readAtLeast = Math.max(
    1,
    Math.min(
      o.batch,
      Math.floor(Math.min(keyCap, maxHeld) / 4),
      keyCap === Infinity ? o.batch : maxHeld - keyCap,
    ),
  );
  // Reads go on while a key is at its cap (as a paused partition): its newer entries are left in
  // this consumer's pending list (XREADGROUP '>' delivered them to it), its key marked spilled, and
  // read back in id order once it has room again, before any newer entry of it runs. Memory stays
  // bounded: entries held at most maxHeld, spilled keys at most SPILLED_KEYS_MAX with one id each.
  const spill = createSpill(keyCap, SPILLED_KEYS_MAX);
  // A spilled key is read back once it has room for readAtLeast entries (as a read waits for).
  const hasRoom = (key: string) => scheduler.count(key) <= keyCap - readAtLeast;
  // When a full read-back pass last reached the end of the pending list (see spill.ts).
  let lastFullPass = Date.now();
  const errors = new LruMap<string, { first: string; last: string }>(ERRORS_KEPT);
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
    waiters.clear();
  };
  const changed = () => new Promise<void>((resolve) => waiters.add(resolve));

  const emit = (event: StreamConsumerEvent) => {
    try {
      o.onEvent?.(event);
    } catch {
      // A failing observer must not stop the consumer.
    }
  };

  const acks = createTickBatcher<{ id: string; token: number }, number>(MAX_SCRIPT_BATCH, async (items) => {
    const args: (string | number)[] = [group, consumer];
    for (const { id, token } of items) args.push(id, token);
    return (await evalScript(client, scripts.streamAck, [stream, o.attemptsKey], args)) as number[];
  });
  const applies =
    ledger === undefined
      ? undefined
      : createTickBatcher<ApplyAckItem, ApplyAckReply>(MAX_SCRIPT_BATCH, (items) => ledger.applyAck(items));

  function prepare(entry: RawEntry, token: number): { key: string; held: Held<E> } {
    const decoded = decodeDelivery<E>(entry, token, o.serializer);
    const delivery = 'delivery' in decoded ? decoded.delivery : undefined;
    let error = 'error' in decoded ? decoded.error : undefined;
    let key = entry.id;
    if (delivery !== undefined && o.key !== undefined) {
      try {
        key = String(o.key(delivery));
      } catch (err) {
        error = err instanceof Error ? err : new Error(String(err));
      }
    }
    return { key, held: { entry, delivery, error } };
  }

  function hold(entry: RawEntry, token: number, key: string, held: Held<E>): void {
    stats.delivered++;
    scheduler.offer(entry.id, key, token, held);
  }

  // An entry delivered to this consumer (read, reclaimed): held, or left pending when its key is
  // spilled or at its cap.
  function offer(entry: RawEntry, token: number): void {
    const known = scheduler.get(entry.id);
    const { key, held } = prepare(entry, token);
    if (known === undefined && spill.place(entry.id, key, scheduler.count(key))) return;
    hold(entry, token, known?.key ?? key, held);
  }

  // One page of a read-back pass: this consumer's own pending entries in id order; each not held
  // is handed back if its key is eligible and has room, else left pending (spilled) for later.
  async function readBack(pass: SpillPass): Promise<void> {
    const rows = (await evalScript(
      reader,
      scripts.streamPendingRead,
      [stream],
      [group, consumer, pass.start, o.batch],
    )) as [string, string[], number][];
    for (const [id, flat, token] of rows) {
      pass.cursor = id;
      if (scheduler.get(id) !== undefined) continue;
      const [entry] = parseEntries([[id, flat]]) as [RawEntry];
      const { key, held } = prepare(entry, token);
      const room = scheduler.held < maxHeld && scheduler.count(key) < keyCap;
      if (pass.eligible.has(key)) {
        if (room) hold(entry, token, key, held);
        else spill.stop(key, id);
      } else if (spill.has(key)) {
        spill.place(id, key, 0);
      } else if (room) {
        // Its own entry it let go (an ack whose outcome was unknown): taken back, as a reclaim would.
        hold(entry, token, key, held);
      } else spill.place(id, key, keyCap);
    }
    pump();
    const end = rows.length < o.batch;
    if (end || (pass.eligible.size === 0 && !pass.full)) {
      if (end && pass.full) lastFullPass = Date.now();
      spill.endPass(end);
    } else pass.start = `(${pass.cursor}`;
  }

  function pump(): void {
    if (signal.aborted) return;
    for (const job of scheduler.take()) void runJob(job);
  }

  function finish(job: ScheduledJob<Held<E>>, outcome: 'done' | 'fenced' | 'failed' | 'lost'): void {
    if (outcome === 'done') {
      scheduler.complete(job.id);
      errors.delete(job.id);
    } else if (outcome === 'failed') {
      scheduler.fail(job.id);
    } else {
      // Not this consumer's any more (fenced), or its ack's outcome is unknown (lost): whoever
      // holds it, or a reclaim if it is still pending, settles it; this consumer lets its key go.
      scheduler.drop(job.id);
      if (outcome === 'fenced') {
        stats.fenced++;
        emit({ type: 'fenced', id: job.id, deliveries: job.token });
      }
    }
    pump();
    wake();
    // A spilled key has room again: a blocked read is ended so that its entries are read back.
    if (blocked && spill.has(job.key) && hasRoom(job.key)) unblock();
  }

  // The dead letter and the ack in one fenced script: 'done', or 'fenced' (nothing written).
  async function writeDead(
    job: ScheduledJob<Held<E>>,
    reason: 'max-deliveries' | 'terminal-error' | 'ledger-stale' | 'handler-error',
    attempts: number,
    err?: unknown,
  ): Promise<'done' | 'fenced'> {
    const seen = errors.get(job.id);
    const last = err === undefined ? (seen?.last ?? '') : errorText(err);
    const first = seen?.first ?? last;
    const done = await evalScript(
      client,
      scripts.streamDead,
      [stream, o.deadStream, o.attemptsKey],
      [
        group,
        consumer,
        job.id,
        job.token,
        reason,
        first,
        last,
        '',
        attempts,
        ...entryFields(job.payload.entry),
      ],
    );
    if (done !== 1) return 'fenced';
    stats.deadLettered++;
    emit({ type: 'dead-letter', id: job.id, reason, deliveries: job.token });
    return 'done';
  }

  async function deadLetter(
    job: ScheduledJob<Held<E>>,
    reason: 'max-deliveries' | 'terminal-error' | 'handler-error',
    attempts: number,
    err?: unknown,
  ): Promise<void> {
    try {
      finish(job, await writeDead(job, reason, attempts, err));
    } catch (error) {
      emit({ type: 'error', operation: 'ack', error });
      finish(job, 'lost');
    }
  }

  async function runJob(job: ScheduledJob<Held<E>>): Promise<void> {
    const { token } = job;
    const held = job.payload;
    // A redelivery is counted as a run first (fenced: a zombie's is not); a first delivery counts
    // as one without a write, the common case.
    let attempts = 1;
    if (token > 1) {
      try {
        attempts = (await evalScript(
          client,
          scripts.streamAttempt,
          [stream, o.attemptsKey],
          [group, consumer, job.id, token],
        )) as number;
      } catch (error) {
        emit({ type: 'error', operation: 'ack', error });
        return finish(job, 'lost');
      }
      if (attempts === 0) return finish(job, 'fenced');
      // The runs before this one: maxDeliveries of them failed (or crashed their consumer).
      if (attempts > o.maxDeliveries) return deadLetter(job, 'max-deliveries', attempts - 1);
    }
    if (held.error !== undefined || held.delivery === undefined) {
      return deadLetter(job, 'terminal-error', attempts, held.error);
    }
    const delivery: Delivery<E> =
      token === held.delivery.deliveries ? held.delivery : { ...held.delivery, deliveries: token };
    let settle: Promise<'done' | 'fenced'>;
    try {
      if (ledger !== undefined) {
        const command = await ledger.command(delivery);
        // The token as of now: a reclaim by this consumer itself (its touch was late) updated it.
        settle =
          command === undefined
            ? ack(job.id, job.token)
            : bookAndAck(job, attempts, { id: job.id, token: job.token, command });
      } else {
        await (o.handler as (d: Delivery<E>) => unknown)(delivery);
        settle = ack(job.id, job.token);
      }
    } catch (err) {
      // A ledger entry the ledger refuses (a bad amount, an owner in another Cluster slot) is
      // refused on every delivery: dead-lettered now, not retried.
      if (ledger !== undefined && isOnceflowError(err, ErrorCode.INVALID_ARGUMENT)) {
        return deadLetter(job, 'terminal-error', attempts, err);
      }
      const text = errorText(err);
      const seen = errors.get(job.id);
      errors.set(job.id, { first: seen?.first ?? text, last: text });
      stats.failed++;
      emit({ type: 'handler-error', id: job.id, deliveries: token, error: err });
      finish(job, 'failed');
      return;
    }
    try {
      finish(job, await settle);
    } catch (error) {
      emit({ type: 'error', operation: 'ack', error });
      finish(job, 'lost');
    }
  }

  async function ack(id: string, token: number): Promise<'done' | 'fenced'> {
    const acked = (await acks({ id, token })) === 1;
    if (acked) stats.acked++;
    return acked ? 'done' : 'fenced';
  }

  async function bookAndAck(
    job: ScheduledJob<Held<E>>,
    attempts: number,
    item: ApplyAckItem,
  ): Promise<'done' | 'fenced'> {
    const { id, token } = item;
    const reply = await (applies as NonNullable<typeof applies>)(item);
    if (reply.outcome === 'fenced') return 'fenced';
    if (reply.outcome !== 'stale') {
      stats.acked++;
      emit({ type: 'applied', id, outcome: reply.outcome, seq: reply.seq });
      return 'done';
    }
    // Stale: left pending by the script. Below the horizon is no proof of a repeat (an entry of a
    // crashed consumer reclaimed after newer entries of its owner were booked): the journal
    // decides, and only an entry it cannot settle is dead-lettered.
    const resolved = await (ledger as LedgerPath<E>).resolve(item.command);
    if (resolved.outcome === 'unknown') {
      const why = new Error(
        'the ledger answered stale (below its horizon) and its journal cannot tell a repeat from a new entry',
      );
      return writeDead(job, 'ledger-stale', attempts, why);
    }
    const settled = await ack(id, token);
    if (settled === 'done') emit({ type: 'applied', id, outcome: resolved.outcome, seq: resolved.seq });
    return settled;
  }

  // XGROUP CREATE ... MKSTREAM in a script (stream-group-create.lua): an existing group is fine.
  async function ensureGroup(): Promise<void> {
    await evalScript(client, scripts.streamGroupCreate, [stream], [group, o.from]);
  }

  // Closed when the script is given to it: refused there, never sent.
  const closedBefore = isClosedClient(o.raw);
  try {
    await ensureGroup();
  } catch (err) {
    throw redisStoreError('createGroup', err, closedBefore, 'script');
  }
  if (signal.aborted) return;
  const ownReader = o.reader === undefined;
  const readerClient = o.reader ?? (o.raw.duplicate as () => StreamClient).call(o.raw);
  // Whether an XREADGROUP ... BLOCK is waiting on the reader (CLIENT UNBLOCK may end it).
  let blocked = false;
  const unblock = () => {
    blocked = false;
    if (typeof readerId === 'number') client.call('CLIENT', 'UNBLOCK', readerId).catch(() => {});
  };
  // The connection's own errors come back as failed reads (reported, retried): a listener keeps
  // ioredis from logging each reconnect attempt as an unhandled 'error' event.
  if (ownReader) readerClient.on?.('error', () => {});
  // A blocking read may wait `block` for entries on top of the wait for the connection and the
  // reply: bounded by both. One whose reply came too late delivered its entries to no one; they
  // stay pending for this consumer and are reclaimed after claimIdle.
  const reader = boundedClient(readerClient, o.timeoutMs + o.blockMs);
  // A blocked read is ended at once on abort by CLIENT UNBLOCK from the main connection (it then
  // answers as a timeout: no entry is delivered and lost); without an id (Cluster, a proxy that
  // refuses CLIENT), the read ends within `block`.
  let readerId: unknown;
  if (!o.cluster) readerId = await reader.call('CLIENT', 'ID').catch(() => undefined);
  const onAbort = () => {
    wake();
    unblock();
  };
  signal.addEventListener('abort', onAbort, { once: true });
  const claiming = claimLoop({
    o,
    scheduler,
    maxHeld,
    offer,
    pump,
    finish,
    deadLetterGone: (job, runs) => deadLetter(job, 'handler-error', runs),
    spillLow: () => spill.low(),
    emit,
    sleep: (ms) => sleep(ms, signal),
  });
  let retryMs = READ_RETRY_MS;
  try {
    while (!signal.aborted) {
      const room = maxHeld - scheduler.held;
      // Spilled entries first, before any newer entry of their key is read: a pass when a spilled
      // key has room again, and a full one every claimIdle (this consumer's own entries it let go
      // are taken back, not left to the touch of its spilled ones until the spill drains).
      const pass =
        spill.pass ??
        (spill.size > 0 && room >= readAtLeast
          ? spill.startPass(hasRoom, Date.now() - lastFullPass >= o.claimIdleMs)
          : undefined);
      if (pass === undefined && room < readAtLeast) {
        await changed();
        continue;
      }
      let reply: unknown;
      try {
        if (pass !== undefined) {
          await readBack(pass);
          retryMs = READ_RETRY_MS;
          continue;
        }
        blocked = true;
        reply = await reader.call(
          'XREADGROUP',
          'GROUP',
          group,
          consumer,
          'COUNT',
          Math.min(o.batch, room),
          'BLOCK',
          o.blockMs,
          'STREAMS',
          stream,
          '>',
        );
        blocked = false;
        retryMs = READ_RETRY_MS;
      } catch (error) {
        blocked = false;
        if (signal.aborted) break;
        emit({ type: 'error', operation: 'read', error });
        if (error instanceof Error && error.message.startsWith('NOGROUP')) {
          await ensureGroup().catch((e: unknown) => emit({ type: 'error', operation: 'group', error: e }));
        }
        await sleep(retryMs, signal);
        retryMs = Math.min(retryMs * 2, READ_RETRY_MAX_MS);
        continue;
      }
      const streams = reply as [string, unknown][] | null;
      for (const entry of parseEntries(streams?.[0]?.[1])) offer(entry, 1);
      pump();
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    await claiming;
    // Graceful: the handlers running finish and their acks settle; entries held but not started
    // stay pending and are reclaimed after claimIdle (by any consumer of the group).
    while (scheduler.running > 0) await changed();
    if (ownReader) readerClient.disconnect?.();
  }
}

/** The entry's fields, flat, as the dead-letter script takes them (its copy if the entry is gone). */
function entryFields(entry: RawEntry): string[] {
  const flat: string[] = [];
  for (const [name, value] of Object.entries(entry.fields)) flat.push(name, value);
  return flat;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
