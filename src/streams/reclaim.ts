// The consumer's claim loop: keeps the entries it holds (touch) and takes over the group's idle
// ones (XAUTOCLAIM), on a timer beside the read loop.
import { timerDelay } from '../core/timer-delay.js';
import { evalScript } from '../redis/eval.js';
import { scripts } from '../redis/scripts.generated.js';
import type { ResolvedOptions, StreamConsumerEvent } from './consumer-options.js';
import { type Delivery, parseEntries, type RawEntry } from './delivery.js';
import type { KeyScheduler, ScheduledJob } from './key-scheduler.js';

/** What a held entry carries: the entry as read, and its decoded delivery or why it has none. */
export interface Held<E> {
  readonly entry: RawEntry;
  readonly delivery: Delivery<E> | undefined;
  readonly error: Error | undefined;
}

/** The consumer state the claim loop works on. */
export interface ClaimContext<E> {
  readonly o: ResolvedOptions<E>;
  readonly scheduler: KeyScheduler<Held<E>>;
  readonly maxHeld: number;
  offer(entry: RawEntry, token: number): void;
  pump(): void;
  finish(job: ScheduledJob<Held<E>>, outcome: 'fenced' | 'lost'): void;
  /** A failed entry trimmed from the stream while pending: dead-lettered from the held copy. */
  deadLetterGone(job: ScheduledJob<Held<E>>, runs: number): Promise<void>;
  /** The lowest id this consumer left pending while its key was blocked (spilled), if any. */
  spillLow(): string | undefined;
  emit(event: StreamConsumerEvent): void;
  sleep(ms: number): Promise<void>;
}

// A claim tick reads at most this many XAUTOCLAIM pages: a backlog of idle entries is taken in
// steps between reads of new ones, never in one long sweep.
const CLAIM_PAGES_PER_TICK = 4;

// Every held entry checked (still this consumer's delivery?) and, unless it failed, its idle time
// reset so no other consumer reclaims an entry that only waits its key's turn or runs long.
async function touch<E>(c: ClaimContext<E>): Promise<void> {
  const jobs = [...c.scheduler.jobs()];
  if (jobs.length === 0) return;
  const args: (string | number)[] = [c.o.group, c.o.consumer];
  for (const job of jobs) args.push(job.id, job.token, job.state === 'failed' ? '0' : '1');
  const ours = (await evalScript(c.o.client, scripts.streamTouch, [c.o.stream], args)) as number[];
  jobs.forEach((job, i) => {
    // A running entry is left to its ack, which the fence refuses.
    if (ours[i] === 0 && job.state !== 'running' && c.scheduler.get(job.id) === job) c.finish(job, 'fenced');
  });
}

// Pending entries one touch-pending call reads: each costs an XPENDING row, an XRANGE and an
// XCLAIM argument (~3 µs), so 500 hold the server ~1.5 ms, as a batch of ledger applies does.
const TOUCH_PENDING_PAGE = 500;

// This consumer's own pending list from the lowest entry it spilled on: those entries are not
// held, so the touch of held ones misses them; but for its failed entries, which must idle until
// claimIdle to be retried. Pages until the end of the list.
async function touchSpilled<E>(c: ClaimContext<E>): Promise<void> {
  const low = c.spillLow();
  if (low === undefined) return;
  const failed: string[] = [];
  for (const job of c.scheduler.jobs()) if (job.state === 'failed') failed.push(job.id);
  for (let start = low; !c.o.signal.aborted; ) {
    const [last, read] = (await evalScript(
      c.o.client,
      scripts.streamTouchPending,
      [c.o.stream],
      [c.o.group, c.o.consumer, start, TOUCH_PENDING_PAGE, ...failed],
    )) as [string, number];
    if (read < TOUCH_PENDING_PAGE) return;
    start = `(${last}`;
  }
}

// Failed entries claimed again by id per script call: each costs an XCLAIM argument and an
// XPENDING, so 128 hold the server well under a millisecond (as MAX_SCRIPT_BATCH in consumer.ts).
const RETRY_IDS_PER_CALL = 128;

async function reclaim<E>(c: ClaimContext<E>): Promise<void> {
  const { o, scheduler } = c;
  // This consumer's failed entries first, by id: they are held already, so their retry needs no
  // room. Claiming them only through XAUTOCLAIM, which takes what room is left, stalled a consumer
  // whose room was full of entries that wait for them (a failed entry blocks its key).
  const failed: string[] = [];
  for (const job of scheduler.jobs()) if (job.state === 'failed') failed.push(job.id);
  // undefined once XAUTOCLAIM's sweep of the pending list has come round.
  let cursor: string | undefined = '0-0';
  for (let page = 0; !o.signal.aborted; page++) {
    const retry = failed.splice(0, RETRY_IDS_PER_CALL);
    // XAUTOCLAIM takes entries this consumer does not hold yet: at most the room it has left.
    const sweep = cursor !== undefined && page < CLAIM_PAGES_PER_TICK;
    const room = sweep ? Math.max(0, c.maxHeld - scheduler.held) : 0;
    if (room === 0 && retry.length === 0) return;
    const [next, claimed, deleted, gone] = (await evalScript(
      o.client,
      scripts.streamClaim,
      [o.stream, o.attemptsKey],
      [o.group, o.consumer, o.claimIdleMs, cursor ?? '0-0', room, ...retry],
    )) as [string, [string, string[], number][], string[], [string, number][]];
    // Failed entries trimmed while pending cannot be delivered again: dead-lettered (fenced) from
    // the copy held, before the next XAUTOCLAIM (which would drop them from the pending list).
    await Promise.all(
      gone.map(([id, runs]) => {
        const job = scheduler.get(id);
        return job !== undefined && job.state === 'failed' ? c.deadLetterGone(job, runs) : undefined;
      }),
    );
    let taken = 0;
    for (const [id, flat, count] of claimed) {
      const [entry] = parseEntries([[id, flat]]);
      // Not held yet: taken over, not this consumer's own failed entry claimed for its retry.
      if (scheduler.get(id) === undefined) taken++;
      c.offer(entry as RawEntry, count);
    }
    if (taken > 0) c.emit({ part: 'stream-consumer', type: 'reclaimed', count: taken });
    if (deleted.length > 0) {
      for (const id of deleted) {
        const job = scheduler.get(id);
        if (job !== undefined && job.state !== 'running') c.finish(job, 'lost');
      }
      c.emit({ part: 'stream-consumer', type: 'deleted', ids: deleted });
    }
    c.pump();
    if (room > 0) cursor = next === '0-0' ? undefined : next;
  }
}

/**
 * Touches and reclaims every claimIdle / 3 until the signal aborts: a held entry's idle time is
 * reset at least twice within claimIdle, so a touch late by one tick (a slow Redis, a busy event
 * loop) still lands before another consumer's XAUTOCLAIM may take it.
 */
export async function claimLoop<E>(c: ClaimContext<E>): Promise<void> {
  // Clamped to the 2^31 - 1 ms a timer holds (a claimIdle over ~74 days): a longer wait would fire
  // after 1 ms and spin the loop; a tick that comes sooner than claimIdle / 3 only touches sooner.
  const interval = timerDelay(Math.floor(c.o.claimIdleMs / 3));
  while (!c.o.signal.aborted) {
    try {
      await touch(c);
      await touchSpilled(c);
    } catch (error) {
      c.emit({ part: 'stream-consumer', type: 'error', operation: 'touch', error });
    }
    try {
      await reclaim(c);
    } catch (error) {
      c.emit({ part: 'stream-consumer', type: 'error', operation: 'claim', error });
    }
    await c.sleep(interval);
  }
}
