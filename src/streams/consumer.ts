import { ClosedError } from '../core/errors.js';
import { LruMap } from '../core/lru-map.js';
import type { Emit } from '../core/observer.js';
import { boundedClient } from '../redis/bounded-client.js';
import { evalScript } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';
import { isClosedClient, redisStoreError } from '../redis/store-error.js';
import { deadLetter, type JobOutcome, jobContext, runJob } from './consumer-jobs.js';
import {
  type ResolvedOptions,
  resolveOptions,
  type StreamClient,
  type StreamConsumerEvent,
  type StreamConsumerOptions,
} from './consumer-options.js';
import { countReporter, statsLoop } from './consumer-reports.js';
import { decodeDelivery, parseEntries, type RawEntry } from './delivery.js';
import { holdLimits, runningBound } from './hold-limits.js';
import { createKeyScheduler, type ScheduledJob } from './key-scheduler.js';
import { batchable, runBatch } from './ledger-batch.js';
import { createLedgerPath, type LedgerPath } from './ledger-path.js';
import { claimLoop, type Held } from './reclaim.js';
import { createSpill, type SpillPass } from './spill.js';

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
  /** Entries acked without the handler: the `preCheck` read said their effect was done. */
  duplicates: number;
}

/** A consumer of one stream in one group (see {@link createStreamConsumer}). */
export interface StreamConsumer {
  /** Reads, runs and acks until `signal` aborts; resolves once the work in flight is done and acked. */
  run(): Promise<void>;
  readonly stats: Readonly<StreamConsumerStats>;
}

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
          // As holdLimits's maxHeld: what the consumer holds at most.
          runningBound(o, true) + o.batch,
        );
  const stats: StreamConsumerStats = {
    delivered: 0,
    acked: 0,
    failed: 0,
    deadLettered: 0,
    fenced: 0,
    duplicates: 0,
  };
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
  // Longer than most functions: one closure over the consumer's state (the scheduler, the spill,
  // the blocked read, the waiters), which the read loop, the read-back, finish and the reclaim loop
  // share; what a job does once it runs is consumer-jobs.ts.
  const { client, stream, group, consumer, signal } = o;
  const scheduler = createKeyScheduler<Held<E>>(runningBound(o, ledger !== undefined));
  const { maxHeld, keyCap, readAtLeast } = holdLimits(o, ledger !== undefined);
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

  // observing() keeps a throwing observer from stopping the consumer.
  const emit: Emit<StreamConsumerEvent> = o.emit ?? (() => {});

  const jobs = jobContext<E>({ o, ledger, stats, errors, emit, finish, finishAll });

  // After each read, claim page and settled job (pump runs then): the counts since the last.
  const report = countReporter(stats, emit);

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

  // On the ledger path, entries are booked a batch per script call (ledger-batch.ts): a key's
  // first deliveries go together, in id order, in one call; a redelivery or an entry that cannot be
  // decoded runs alone (runJob: its attempt is counted first, or it is dead-lettered).
  const runs = { max: o.batch, joins: batchable };
  function pump(): void {
    report();
    if (signal.aborted) return;
    if (ledger === undefined) {
      for (const job of scheduler.take()) void runJob(jobs, job);
      return;
    }
    for (;;) {
      const taken = scheduler.take(runs);
      if (taken.length === 0) return;
      const batch: ScheduledJob<Held<E>>[] = [];
      for (const job of taken) {
        if (batchable(job)) batch.push(job);
        else void runJob(jobs, job);
      }
      if (batch.length > 0) void runBatch(jobs, batch);
    }
  }

  function finish(job: ScheduledJob<Held<E>>, outcome: JobOutcome): void {
    settle(job, outcome);
    pump();
    wake();
  }

  // Every job of a batch settled before the next take: its freed places make one batch, not many.
  function finishAll(settled: readonly (readonly [ScheduledJob<Held<E>>, JobOutcome])[]): void {
    for (const [job, outcome] of settled) settle(job, outcome);
    pump();
    wake();
  }

  function settle(job: ScheduledJob<Held<E>>, outcome: JobOutcome): void {
    if (outcome === 'held') {
      scheduler.release(job.id);
      return;
    }
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
        emit({ part: 'stream-consumer', type: 'fenced', id: job.id, deliveries: job.token });
      }
    }
    // A spilled key has room again: a blocked read is ended so that its entries are read back.
    if (blocked && spill.has(job.key) && hasRoom(job.key)) unblock();
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
    deadLetterGone: (job, runs) => deadLetter(jobs, job, 'handler-error', runs),
    spillLow: () => spill.low(),
    emit,
    sleep: (ms) => sleep(ms, signal),
  });
  const reporting = statsLoop(o, emit, (ms) => sleep(ms, signal));
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
        emit({ part: 'stream-consumer', type: 'error', operation: 'read', error });
        if (error instanceof Error && error.message.startsWith('NOGROUP')) {
          await ensureGroup().catch((e: unknown) =>
            emit({ part: 'stream-consumer', type: 'error', operation: 'group', error: e }),
          );
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
    await Promise.all([claiming, reporting]);
    // Graceful: the handlers running finish and their acks settle; entries held but not started
    // stay pending and are reclaimed after claimIdle (by any consumer of the group).
    while (scheduler.running > 0) await changed();
    if (ownReader) readerClient.disconnect?.();
  }
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
