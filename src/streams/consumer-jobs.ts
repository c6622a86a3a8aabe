// What a consumer does with each entry it runs (consumer.ts reads them and schedules them): the
// handler or the ledger booking, then the ack; the dead letter of an entry that cannot run.
import { ErrorCode, isOnceflowError } from '../core/errors.js';
import type { LruMap } from '../core/lru-map.js';
import { evalScript } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';
import type { ResolvedOptions, StreamConsumerEvent } from './consumer-options.js';
import { type Delivery, errorText, type RawEntry } from './delivery.js';
import type { ScheduledJob } from './key-scheduler.js';
import type { ApplyAckItem, ApplyAckReply, LedgerPath } from './ledger-path.js';
import { handled, seenBefore } from './pre-check.js';
import type { Held } from './reclaim.js';
import { createTickBatcher } from './tick-batcher.js';

// At most this many entries per ack / apply-ack script: each costs Redis an XPENDING (apply-ack:
// its share of one XPENDING range) and its share of one XACK (~2-4 µs; a booking ~8-20 µs,
// MAX_BATCH in src/redis/ledger-ops.ts), so 128 hold the server ~0.5-3 ms at most, as a batch of
// ledger applies does.
const MAX_SCRIPT_BATCH = 128;

/**
 * How a job ended, for the consumer's bookkeeping (see settle in consumer.ts); `held`: a job of a
 * ledger batch that did nothing and waits again for its key's turn (see ledger-batch.ts).
 */
export type JobOutcome = 'done' | 'fenced' | 'failed' | 'lost' | 'held';

/** What running a job needs of its consumer. */
export interface JobContext<E> {
  readonly o: ResolvedOptions<E>;
  readonly ledger: LedgerPath<E> | undefined;
  /** The consumer's counts (its StreamConsumerStats). */
  readonly stats: { acked: number; failed: number; deadLettered: number; duplicates: number };
  /** Per entry, the first and last error message, for its dead letter. */
  readonly errors: LruMap<string, { first: string; last: string }>;
  emit(event: StreamConsumerEvent): void;
  /** Settles the job in the consumer (its key freed, the next job started). */
  finish(job: ScheduledJob<Held<E>>, outcome: JobOutcome): void;
  /** Settles the jobs of one batch together, then starts what may start. */
  finishAll(settled: readonly (readonly [ScheduledJob<Held<E>>, JobOutcome])[]): void;
  /** Acks of one turn, batched into stream-ack.lua calls. */
  readonly acks: (item: { id: string; token: number }) => Promise<number>;
  /** With a ledger: bookings and acks of one turn, batched (see ledger-path.ts). */
  readonly applies: ((item: ApplyAckItem) => Promise<ApplyAckReply>) | undefined;
}

/** A job context with its consumer's ack (and apply-ack) batchers. */
export function jobContext<E>(parts: Omit<JobContext<E>, 'acks' | 'applies'>): JobContext<E> {
  const { o, ledger } = parts;
  const { client, stream, group, consumer } = o;
  const acks = createTickBatcher<{ id: string; token: number }, number>(MAX_SCRIPT_BATCH, async (items) => {
    const args: (string | number)[] = [group, consumer];
    for (const { id, token } of items) args.push(id, token);
    return (await evalScript(client, scripts.streamAck, [stream, o.attemptsKey], args)) as number[];
  });
  const applies =
    ledger === undefined
      ? undefined
      : createTickBatcher<ApplyAckItem, ApplyAckReply>(MAX_SCRIPT_BATCH, (items) => ledger.applyAck(items));
  return { ...parts, acks, applies };
}

// The dead letter and the ack in one fenced script: 'done', or 'fenced' (nothing written).
async function writeDead<E>(
  c: JobContext<E>,
  job: ScheduledJob<Held<E>>,
  reason: 'max-deliveries' | 'terminal-error' | 'ledger-stale' | 'handler-error',
  attempts: number,
  err?: unknown,
): Promise<'done' | 'fenced'> {
  const seen = c.errors.get(job.id);
  const last = err === undefined ? (seen?.last ?? '') : errorText(err);
  const first = seen?.first ?? last;
  const done = await evalScript(
    c.o.client,
    scripts.streamDead,
    [c.o.stream, c.o.deadStream, c.o.attemptsKey],
    [
      c.o.group,
      c.o.consumer,
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
  c.stats.deadLettered++;
  c.emit({ part: 'stream-consumer', type: 'dead-letter', id: job.id, reason, deliveries: job.token });
  return 'done';
}

export async function deadLetter<E>(
  c: JobContext<E>,
  job: ScheduledJob<Held<E>>,
  reason: 'max-deliveries' | 'terminal-error' | 'handler-error',
  attempts: number,
  err?: unknown,
): Promise<void> {
  try {
    c.finish(job, await writeDead(c, job, reason, attempts, err));
  } catch (error) {
    c.emit({ part: 'stream-consumer', type: 'error', operation: 'ack', error });
    c.finish(job, 'lost');
  }
}

/** Runs a job alone: a handler, or on the ledger path a redelivery or an entry that cannot run. */
export async function runJob<E>(c: JobContext<E>, job: ScheduledJob<Held<E>>): Promise<void> {
  const { token } = job;
  const held = job.payload;
  // A redelivery is counted as a run first (fenced: a zombie's is not); a first delivery counts
  // as one without a write, the common case.
  let attempts = 1;
  if (token > 1) {
    try {
      attempts = (await evalScript(
        c.o.client,
        scripts.streamAttempt,
        [c.o.stream, c.o.attemptsKey],
        [c.o.group, c.o.consumer, job.id, token],
      )) as number;
    } catch (error) {
      c.emit({ part: 'stream-consumer', type: 'error', operation: 'ack', error });
      return c.finish(job, 'lost');
    }
    if (attempts === 0) return c.finish(job, 'fenced');
    // The runs before this one: maxDeliveries of them failed (or crashed their consumer).
    if (attempts > c.o.maxDeliveries) return deadLetter(c, job, 'max-deliveries', attempts - 1);
  }
  if (held.error !== undefined || held.delivery === undefined) {
    return deadLetter(c, job, 'terminal-error', attempts, held.error);
  }
  const delivery: Delivery<E> =
    token === held.delivery.deliveries ? held.delivery : { ...held.delivery, deliveries: token };
  let settle: Promise<'done' | 'fenced'>;
  try {
    if (c.ledger !== undefined) {
      const command = await c.ledger.command(delivery);
      // The token as of now: a reclaim by this consumer itself (its touch was late) updated it.
      settle =
        command === undefined
          ? ack(c, job.id, job.token)
          : bookAndAck(c, job, attempts, { id: job.id, token: job.token, command });
    } else if (c.o.preCheck !== undefined && (await seenBefore(c.o.preCheck, (e) => c.emit(e), delivery))) {
      // The authoritative read says its effect is done: acked without the handler.
      c.stats.duplicates++;
      settle = ack(c, job.id, job.token);
    } else {
      await (c.o.handler as (d: Delivery<E>) => unknown)(delivery);
      if (c.o.preCheck !== undefined) handled(c.o.preCheck, delivery);
      settle = ack(c, job.id, job.token);
    }
  } catch (err) {
    // A ledger entry the ledger refuses (a bad amount, an owner in another Cluster slot) is
    // refused on every delivery: dead-lettered now, not retried.
    if (c.ledger !== undefined && isOnceflowError(err, ErrorCode.INVALID_ARGUMENT)) {
      return deadLetter(c, job, 'terminal-error', attempts, err);
    }
    const text = errorText(err);
    const seen = c.errors.get(job.id);
    c.errors.set(job.id, { first: seen?.first ?? text, last: text });
    c.stats.failed++;
    c.emit({ part: 'stream-consumer', type: 'handler-error', id: job.id, deliveries: token, error: err });
    c.finish(job, 'failed');
    return;
  }
  try {
    c.finish(job, await settle);
  } catch (error) {
    c.emit({ part: 'stream-consumer', type: 'error', operation: 'ack', error });
    c.finish(job, 'lost');
  }
}

async function ack<E>(c: JobContext<E>, id: string, token: number): Promise<'done' | 'fenced'> {
  const acked = (await c.acks({ id, token })) === 1;
  if (acked) c.stats.acked++;
  return acked ? 'done' : 'fenced';
}

async function bookAndAck<E>(
  c: JobContext<E>,
  job: ScheduledJob<Held<E>>,
  attempts: number,
  item: ApplyAckItem,
): Promise<'done' | 'fenced'> {
  const { id } = item;
  const reply = await (c.applies as NonNullable<JobContext<E>['applies']>)(item);
  // Alone (no run) and with a command: never held nor acked without a booking.
  if (!('seq' in reply)) return 'fenced';
  if (reply.outcome !== 'stale') {
    c.stats.acked++;
    c.emit({ part: 'stream-consumer', type: 'applied', id, outcome: reply.outcome, seq: reply.seq });
    return 'done';
  }
  return settleStale(c, job, attempts, item);
}

/** An entry its booking answered `stale` (left pending): resolved from the journal, then acked. */
export async function settleStale<E>(
  c: JobContext<E>,
  job: ScheduledJob<Held<E>>,
  attempts: number,
  item: ApplyAckItem,
): Promise<'done' | 'fenced'> {
  const { id, token } = item;
  const command = item.command as NonNullable<ApplyAckItem['command']>;
  // Stale: left pending by the script. Below the horizon is no proof of a repeat (an entry of a
  // crashed consumer reclaimed after newer entries of its owner were booked): the journal
  // decides, and only an entry it cannot settle is dead-lettered.
  const resolved = await (c.ledger as LedgerPath<E>).resolve(command);
  if (resolved.outcome === 'unknown') {
    const why = new Error(
      'the ledger answered stale (below its horizon) and its journal cannot tell a repeat from a new entry',
    );
    return writeDead(c, job, 'ledger-stale', attempts, why);
  }
  const settled = await ack(c, id, token);
  if (settled === 'done')
    c.emit({ part: 'stream-consumer', type: 'applied', id, outcome: resolved.outcome, seq: resolved.seq });
  return settled;
}

/** The entry's fields, flat, as the dead-letter script takes them (its copy if the entry is gone). */
function entryFields(entry: RawEntry): string[] {
  const flat: string[] = [];
  for (const [name, value] of Object.entries(entry.fields)) flat.push(name, value);
  return flat;
}
