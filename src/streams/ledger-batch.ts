// The ledger path's batches: the entries the consumer takes together (up to `batch`, a key's
// entries in id order as one run) are made into ledger entries, then booked and acked by one
// stream-apply-ack.lua call, not one call per entry or per handler slot.
import { ErrorCode, isOnceflowError } from '../core/errors.js';
import type { LedgerApplyCommand } from '../store/store.js';
import { deadLetter, type JobContext, type JobOutcome, settleStale } from './consumer-jobs.js';
import { errorText } from './delivery.js';
import type { ScheduledJob } from './key-scheduler.js';
import type { ApplyAckItem, LedgerPath } from './ledger-path.js';
import type { Held } from './reclaim.js';

/**
 * Whether a job may be booked in a batch: a first delivery that decoded. A redelivery counts its
 * attempt first (stream-attempt.lua, which may dead-letter it) and an entry that cannot be decoded
 * is dead-lettered: both run alone (runJob).
 */
export function batchable<E>(job: ScheduledJob<Held<E>>): boolean {
  return job.token === 1 && job.payload.delivery !== undefined && job.payload.error === undefined;
}

type Made = { readonly command: LedgerApplyCommand | undefined } | { readonly error: unknown };

/**
 * Books `jobs` (as the scheduler took them: each key's run consecutive, in id order) in one script
 * call and settles them together. An entry whose ledger entry cannot be made ends its run: it is
 * dead-lettered (refused by the ledger) or failed (the `entry` function threw), and the entries
 * after it in its run are held again, so a key's entries are still booked in stream order.
 */
export async function runBatch<E>(c: JobContext<E>, jobs: readonly ScheduledJob<Held<E>>[]): Promise<void> {
  const ledger = c.ledger as LedgerPath<E>;
  const made = await Promise.all(
    jobs.map((job) =>
      ledger.command(job.payload.delivery as NonNullable<Held<E>['delivery']>).then(
        (command): Made => ({ command }),
        (error: unknown): Made => ({ error }),
      ),
    ),
  );
  const settled: [ScheduledJob<Held<E>>, JobOutcome][] = [];
  const items: ApplyAckItem[] = [];
  const booked: ScheduledJob<Held<E>>[] = [];
  // The key whose run ended at an entry that could not be made: its later entries are held.
  let ended: string | undefined;
  let previous: string | undefined;
  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i] as ScheduledJob<Held<E>>;
    const m = made[i] as Made;
    if (job.key !== ended) ended = undefined;
    if (ended !== undefined) {
      settled.push([job, 'held']);
    } else if ('error' in m) {
      ended = job.key;
      if (unmade(c, job, m.error)) settled.push([job, 'failed']);
    } else {
      items.push({ id: job.id, token: job.token, command: m.command, follows: previous === job.key });
      booked.push(job);
      previous = job.key;
      continue;
    }
    previous = undefined;
  }
  if (items.length > 0) {
    try {
      const replies = await ledger.applyAck(items);
      for (let i = 0; i < booked.length; i++) {
        const job = booked[i] as ScheduledJob<Held<E>>;
        const reply = replies[i] as Awaited<ReturnType<LedgerPath<E>['applyAck']>>[number];
        if (reply.outcome === 'fenced' || reply.outcome === 'held') {
          settled.push([job, reply.outcome]);
        } else if (reply.outcome === 'stale') {
          void stale(c, job, items[i] as ApplyAckItem);
        } else {
          c.stats.acked++;
          if ('seq' in reply)
            c.emit({
              part: 'stream-consumer',
              type: 'applied',
              id: job.id,
              outcome: reply.outcome,
              seq: reply.seq,
            });
          settled.push([job, 'done']);
        }
      }
    } catch (error) {
      // Its outcome is unknown: whatever was booked is acked too (one script), and what was not
      // stays pending and is reclaimed (claimIdle) or taken back by this consumer's read-back.
      c.emit({ part: 'stream-consumer', type: 'error', operation: 'ack', error });
      for (const job of booked) settled.push([job, 'lost']);
    }
  }
  c.finishAll(settled);
}

// The entry function threw for this job: a refused entry (INVALID_ARGUMENT: a bad amount, an
// owner in another Cluster slot) is refused on every delivery, so dead-lettered now; any other
// error leaves it pending, delivered again after claimIdle (as a handler's throw).
// Returns whether the job failed (settled with the batch); a dead letter settles it itself.
function unmade<E>(c: JobContext<E>, job: ScheduledJob<Held<E>>, err: unknown): boolean {
  if (isOnceflowError(err, ErrorCode.INVALID_ARGUMENT)) {
    void deadLetter(c, job, 'terminal-error', 1, err);
    return false;
  }
  const text = errorText(err);
  const seen = c.errors.get(job.id);
  c.errors.set(job.id, { first: seen?.first ?? text, last: text });
  c.stats.failed++;
  c.emit({ part: 'stream-consumer', type: 'handler-error', id: job.id, deliveries: job.token, error: err });
  return true;
}

async function stale<E>(c: JobContext<E>, job: ScheduledJob<Held<E>>, item: ApplyAckItem): Promise<void> {
  try {
    c.finish(job, await settleStale(c, job, 1, item));
  } catch (error) {
    c.emit({ part: 'stream-consumer', type: 'error', operation: 'ack', error });
    c.finish(job, 'lost');
  }
}
