import { ClosedError, InvalidArgumentError } from '../core/errors.js';
import { timerDelay } from '../core/timer-delay.js';
import { isPlainObject } from '../core/validate.js';
import type { GapRange } from '../windows/reorder-buffer.js';
import { type CompensatorOptions, checkOptions } from './compensator-options.js';
import { OpenRanges } from './open-ranges.js';

export type { CompensatorOptions } from './compensator-options.js';

/** Counters of a compensator, for metrics. */
export interface CompensatorStats {
  readonly queued: number;
  readonly inFlight: number;
  readonly waiting: number;
  readonly requested: number;
  readonly retried: number;
  readonly cancelled: number;
  readonly givenUp: number;
}

/** The compensation lane of a consumer: see {@link createCompensator}. */
export interface Compensator {
  /** Takes gap ranges (from `ReorderBuffer.tick` or a push's `gaps`). */
  add(gaps: GapRange | readonly GapRange[]): void;
  /** A late arrival filled `seq`: it is not requested any more (a filled range is cancelled). */
  fill(seq: number): void;
  /** The numbers still to be compensated (queued, waiting for a retry or in flight), ascending. */
  pending(): GapRange[];
  stats(): CompensatorStats;
  /** Resolves when nothing is queued, waiting or in flight. */
  idle(): Promise<void>;
  /** Aborts what is in flight and drops the rest; a later `add` throws `ERR_CLOSED` (reads still answer). */
  close(): void;
}

interface Job {
  from: number;
  to: number;
  attempt: number;
  /** `yielding`: picked to start, holding its slot while the normal lane goes first (`yieldTo`). */
  state: 'queued' | 'waiting' | 'yielding' | 'running';
  controller?: AbortController;
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * The compensation channel of seed 002 (DESIGN §3.4): takes the gap ranges a reorder buffer gave
 * up on, coalesces them (adjacent and overlapping ranges become one request), and re-requests them
 * on its own lane with bounded concurrency. The lane has lower priority than the consumer's
 * normal work: given `yieldTo` (the consumer's `drained`), a request starts only once the
 * deliveries waiting when it fell due are done; without it, from a macrotask, after the work
 * already queued. A failed request is retried with exponential backoff and full jitter; numbers
 * filled by late arrivals meanwhile are not requested again (a fully filled request is aborted);
 * what is still missing after the last retry goes to `onGiveUp`.
 *
 * @example
 * ```ts
 * const asked = [];
 * const lane = createCompensator({ request: async (range) => { asked.push(range); } });
 * lane.add([{ from: 3, to: 4 }, { from: 5, to: 5 }, { from: 9, to: 9 }]);
 * lane.fill(9);
 * await lane.idle();
 * asked; // [{ from: 3, to: 5 }]
 * ```
 */
export function createCompensator(options: CompensatorOptions): Compensator {
  // Longer than most functions: one closure over the lane's state (the open ranges, the jobs, the
  // slots in use), which the pump, the jobs' settling and the lane's methods share; the range
  // arithmetic is open-ranges.ts, the options compensator-options.ts.
  const {
    request,
    onGiveUp,
    concurrency,
    retries,
    maxRange,
    initialMs,
    maxMs,
    factor,
    yieldTo,
    random,
    emit,
  } = checkOptions(options);

  // Numbers still to compensate.
  const open = new OpenRanges(maxRange);
  const jobs = new Set<Job>();
  const counts = { requested: 0, retried: 0, cancelled: 0, givenUp: 0 };
  let running = 0;
  let yielding = 0; // jobs picked to start, waiting for the normal lane (each holds a slot)
  let pumpScheduled = false;
  let closed = false;
  let idleWaiters: (() => void)[] = [];

  const settleIdle = () => {
    if (jobs.size > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const w of waiters) w();
  };

  const schedulePump = () => {
    if (pumpScheduled || closed) return;
    pumpScheduled = true;
    // A macrotask: the live stream's pending microtasks (its releases and effects) run first.
    setImmediate(pump);
  };

  function pump(): void {
    pumpScheduled = false;
    if (closed) return;
    while (running + yielding < concurrency) {
      // The lowest queued range first: it unblocks the consumer's oldest gap.
      let job: Job | undefined;
      for (const j of jobs) if (j.state === 'queued' && (job === undefined || j.from < job.from)) job = j;
      if (job === undefined) break;
      if (yieldTo === undefined) start(job);
      else yieldThenStart(job, yieldTo);
    }
  }

  /**
   * Lets the normal lane go first, then starts the job: the priority holds by construction, for
   * the wait is on the normal lane's own signal of being done, not on a turn of the event loop.
   */
  function yieldThenStart(job: Job, normal: () => unknown): void {
    job.state = 'yielding';
    yielding++;
    let waited: Promise<unknown>;
    try {
      waited = Promise.resolve(normal());
    } catch (err) {
      waited = Promise.reject(err);
    }
    const go = () => {
      yielding--;
      // Filled meanwhile (fill dropped it) or closed: nothing to start.
      if (!closed && jobs.has(job)) {
        job.state = 'queued';
        start(job);
      }
      schedulePump();
      settleIdle();
    };
    waited.then(go, go);
  }

  function start(job: Job): void {
    // Only what is still open is asked for: late arrivals may have filled part of a queued job.
    const first = open.firstOpen(job.from, job.to);
    if (first === undefined) {
      jobs.delete(job);
      counts.cancelled++;
      settleIdle();
      return;
    }
    // The rest of the job stays queued, as one job, to start once this piece is under way.
    if (first.to < job.to && open.firstOpen(first.to + 1, job.to) !== undefined) {
      jobs.add({ from: first.to + 1, to: job.to, attempt: job.attempt, state: 'queued' });
    }
    job.from = first.from;
    job.to = first.to;
    job.state = 'running';
    job.controller = new AbortController();
    running++;
    counts.requested++;
    const range = { from: job.from, to: job.to };
    let attempt: Promise<void>;
    try {
      attempt = Promise.resolve(request(range, job.controller.signal));
    } catch (err) {
      attempt = Promise.reject(err);
    }
    attempt.then(
      () => finish(job, undefined, true),
      (err: unknown) => finish(job, err, false),
    );
  }

  function finish(job: Job, error: unknown, ok: boolean): void {
    running--;
    if (!jobs.has(job)) {
      // Cancelled (filled) or closed while in flight: its answer no longer matters.
      schedulePump();
      settleIdle();
      return;
    }
    jobs.delete(job);
    let givenUp: GapRange[] = [];
    // Accepted by the source: its events now come as late arrivals, and this range is no longer
    // the lane's to track (kept, it would stay pending forever if they never came, and a second
    // `add` of it would request nothing).
    if (ok) {
      open.remove(job.from, job.to);
      if (emit !== undefined) {
        emit({ part: 'compensator', type: 'filled', from: job.from, to: job.to, backlog: jobs.size });
      }
    }
    if (!ok) {
      const rest = open.stillOpen(job.from, job.to);
      if (job.attempt >= retries) {
        givenUp = rest;
        for (const r of rest) {
          open.remove(r.from, r.to);
          counts.givenUp++;
        }
      } else {
        const cap = Math.min(maxMs, initialMs * factor ** job.attempt);
        // Full jitter: retries of many consumers spread out. Clamped as well: `random` is the
        // caller's, and one answering above 1 must not push a delay past what a timer honours.
        const delay = timerDelay(Math.floor(random() * cap));
        for (const r of rest) {
          const retry: Job = { ...r, attempt: job.attempt + 1, state: 'waiting' };
          counts.retried++;
          retry.timer = setTimeout(() => {
            retry.state = 'queued';
            delete retry.timer;
            schedulePump();
          }, delay);
          jobs.add(retry);
          if (emit !== undefined) {
            emit({
              part: 'compensator',
              type: 'retry',
              from: r.from,
              to: r.to,
              attempt: retry.attempt,
              backlog: jobs.size,
            });
          }
        }
      }
    }
    schedulePump();
    settleIdle();
    // Called last, with the lane's state already settled: an alert hook that throws cannot leave
    // the lane half-updated. Every range is reported, even after a throw (they have left the
    // lane: one not reported is lost silently); the exception is not swallowed: the first (or an
    // AggregateError of several) surfaces afterwards, as an unhandled rejection.
    const thrown: unknown[] = [];
    for (const r of givenUp) {
      if (emit !== undefined) {
        emit({ part: 'compensator', type: 'give-up', from: r.from, to: r.to, backlog: jobs.size, error });
      }
      try {
        onGiveUp?.(r, error);
      } catch (hookError) {
        thrown.push(hookError);
      }
    }
    if (thrown.length === 1) throw thrown[0];
    if (thrown.length > 1) throw new AggregateError(thrown, `onGiveUp threw for ${thrown.length} ranges`);
  }

  /** The parts of [from, to] that no job covers, ascending. */
  function notInJobs(from: number, to: number): GapRange[] {
    const held = [...jobs].filter((j) => j.to >= from && j.from <= to).sort((a, b) => a.from - b.from);
    const out: GapRange[] = [];
    let s = from;
    for (const j of held) {
      if (j.from > s) out.push({ from: s, to: Math.min(to, j.from - 1) });
      s = Math.max(s, j.to + 1);
      if (s > to) return out;
    }
    out.push({ from: s, to });
    return out;
  }

  return {
    add(gaps) {
      if (closed) throw new ClosedError('compensator');
      const list = Array.isArray(gaps) ? gaps : [gaps as GapRange];
      // The whole list is checked before any of it is taken: a bad range changes nothing.
      for (const [i, g] of list.entries()) {
        const u = g as unknown as Record<string, unknown>;
        const ok = isPlainObject(u) && isSeq(u.from) && isSeq(u.to) && g.from <= g.to;
        if (!ok) {
          throw new InvalidArgumentError(
            `gaps[${i}]`,
            'a range { from, to } of sequence numbers with from <= to',
            g,
          );
        }
      }
      for (const g of list) {
        // Newly open numbers that no job holds (one that came late and went missing again may
        // still sit in a waiting retry or a request in flight: that job asks for it; a second
        // job would ask for it twice at once).
        for (const fresh of open.add(g.from, g.to).flatMap((r) => notInJobs(r.from, r.to))) {
          // Coalesce with a queued first attempt that touches it, else queue a new job.
          let target: Job | undefined;
          for (const j of jobs) {
            if (j.state === 'queued' && j.attempt === 0 && fresh.from <= j.to + 1 && fresh.to >= j.from - 1) {
              target = j;
              break;
            }
          }
          // A job may be any length: it is cut into requests of at most maxRange as it starts.
          if (target !== undefined) {
            target.from = Math.min(target.from, fresh.from);
            target.to = Math.max(target.to, fresh.to);
          } else {
            jobs.add({ ...fresh, attempt: 0, state: 'queued' });
          }
        }
        if (emit !== undefined)
          emit({ part: 'compensator', type: 'gap', from: g.from, to: g.to, backlog: jobs.size });
      }
      schedulePump();
    },
    fill(seq) {
      if (!isSeq(seq)) throw new InvalidArgumentError('seq', 'a non-negative safe integer', seq);
      open.remove(seq, seq);
      for (const job of [...jobs]) {
        if (seq < job.from || seq > job.to) continue;
        if (open.firstOpen(job.from, job.to) !== undefined) continue;
        // Every number of this job came late: drop it, abort it if it is in flight.
        jobs.delete(job);
        counts.cancelled++;
        if (job.timer !== undefined) clearTimeout(job.timer);
        job.controller?.abort();
        if (emit !== undefined) {
          emit({ part: 'compensator', type: 'filled', from: job.from, to: job.to, backlog: jobs.size });
        }
      }
      settleIdle();
    },
    pending: () => open.list(),
    stats() {
      let queued = 0;
      let waiting = 0;
      for (const j of jobs) {
        if (j.state === 'queued' || j.state === 'yielding') queued++;
        else if (j.state === 'waiting') waiting++;
      }
      return { queued, inFlight: running, waiting, ...counts };
    },
    idle() {
      if (jobs.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    close() {
      closed = true;
      for (const job of jobs) {
        if (job.timer !== undefined) clearTimeout(job.timer);
        job.controller?.abort();
      }
      jobs.clear();
      open.clear();
      settleIdle();
    },
  };
}

/** A sequence number as a reorder buffer takes it (the gaps a compensator gets come from one). */
function isSeq(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}
