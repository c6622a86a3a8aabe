import type { Duration } from '../core/duration.js';
import { ClosedError, InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { timerDelay, timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, nonNegativeInt, positiveInt } from '../core/validate.js';
import type { GapRange } from '../windows/reorder-buffer.js';

/** Options of {@link createCompensator}. */
export interface CompensatorOptions {
  /**
   * Asks the source to send a range again (both ends included). Resolves once the source accepted
   * the request (the events then come through the normal path, as late arrivals); rejects to be
   * retried. `signal` aborts when late arrivals filled the whole range or the compensator closed.
   */
  request: (range: GapRange, signal: AbortSignal) => Promise<void>;
  /** Requests in flight at most. Default 2. */
  concurrency?: number;
  /** Retries after the first attempt. Default 5. */
  retries?: number;
  /** Exponential backoff: `initial * factor^attempt`, capped at `max`, with full jitter. */
  backoff?: { initial?: Duration; max?: Duration; factor?: number };
  /** Coalesced ranges longer than this are requested in pieces. Default 1000. */
  maxRange?: number;
  /** Called once per range still unfilled after the last retry: the place to alert. */
  onGiveUp?: (range: GapRange, error: unknown) => void;
  /** Jitter source in [0, 1). Default `Math.random`. */
  random?: () => number;
  /**
   * The normal work this lane yields to: before each request starts, the lane calls it and waits
   * until what it returns settles (fulfilled or rejected: the request is still due). Pass the
   * consumer's own "everything delivered so far is done", `() => reorderer.drained()`: every
   * delivery waiting when a request falls due then goes first, however long its effect takes.
   * Without it a request starts from a macrotask: only work already queued (microtasks, ready I/O
   * callbacks) goes first, and a slow effect still under way competes with the request.
   */
  yieldTo?: () => unknown;
}

const COMPENSATOR_OPTIONS = keysOf<CompensatorOptions>({
  request: true,
  concurrency: true,
  retries: true,
  backoff: true,
  maxRange: true,
  onGiveUp: true,
  random: true,
  yieldTo: true,
});
const BACKOFF_OPTIONS = keysOf<NonNullable<CompensatorOptions['backoff']>>({
  initial: true,
  max: true,
  factor: true,
});

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

// 2 in flight: compensation is the low-priority lane; it must not compete with the live stream
// for the source's capacity, and two requests already hide one slow round trip.
const DEFAULT_CONCURRENCY = 2;
// 5 retries at 100 ms doubling (capped at 10 s): ~3 s of trying in all before an alert, long
// enough to ride out a source restart, short enough that a human hears of a real loss quickly.
const DEFAULT_RETRIES = 5;
const DEFAULT_INITIAL = '100ms';
const DEFAULT_MAX = '10s';
const DEFAULT_FACTOR = 2;
// 1000 numbers per request: a source's re-send endpoint pages; one huge range must not become one
// huge response.
const DEFAULT_MAX_RANGE = 1000;

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
  if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, COMPENSATOR_OPTIONS);
  const { request, onGiveUp } = options;
  if (typeof request !== 'function') throw new InvalidOptionError('request', 'a function', request);
  if (onGiveUp !== undefined && typeof onGiveUp !== 'function') {
    throw new InvalidOptionError('onGiveUp', 'a function', onGiveUp);
  }
  const concurrency = positiveInt('concurrency', options.concurrency ?? DEFAULT_CONCURRENCY);
  const retries = nonNegativeInt('retries', options.retries ?? DEFAULT_RETRIES);
  const maxRange = positiveInt('maxRange', options.maxRange ?? DEFAULT_MAX_RANGE);
  const backoff = options.backoff ?? {};
  if (!isPlainObject(backoff as unknown)) throw new InvalidOptionError('backoff', 'an object', backoff);
  knownKeys('backoff', backoff, BACKOFF_OPTIONS);
  // A retry waits in one timer (see timerDuration).
  const initialMs = timerDuration('backoff.initial', backoff.initial ?? DEFAULT_INITIAL);
  const maxMs = timerDuration('backoff.max', backoff.max ?? DEFAULT_MAX);
  const factor = backoff.factor ?? DEFAULT_FACTOR;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1) {
    throw new InvalidOptionError('backoff.factor', 'a finite number >= 1', backoff.factor);
  }
  const { yieldTo } = options;
  if (yieldTo !== undefined && typeof yieldTo !== 'function') {
    throw new InvalidOptionError('yieldTo', 'a function', yieldTo);
  }
  const random = options.random ?? Math.random;
  // Read on a first retry only: a bad one found then would leave its range neither retried nor given up.
  if (typeof random !== 'function') throw new InvalidOptionError('random', 'a function', options.random);

  // Numbers still to compensate: sorted, disjoint, non-adjacent ranges.
  let open: GapRange[] = [];
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

  /** The parts of [from, to] still open, cut into pieces of at most maxRange (a bounded range only). */
  const stillOpen = (from: number, to: number): GapRange[] => {
    const out: GapRange[] = [];
    for (const r of open) {
      const a = Math.max(from, r.from);
      const b = Math.min(to, r.to);
      for (let s = a; s <= b; s += maxRange) out.push({ from: s, to: Math.min(b, s + maxRange - 1) });
    }
    return out;
  };

  /**
   * The first still-open piece of [from, to], at most maxRange long, or undefined. Never lists the
   * rest: a queued job may span billions of numbers (one corrupt sequence number far ahead makes
   * a gap that size) and is requested piece by piece, as each piece starts.
   */
  const firstOpen = (from: number, to: number): GapRange | undefined => {
    for (const r of open) {
      if (r.to < from) continue;
      if (r.from > to) return undefined;
      const a = Math.max(from, r.from);
      return { from: a, to: Math.min(to, r.to, a + maxRange - 1) };
    }
    return undefined;
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
    const first = firstOpen(job.from, job.to);
    if (first === undefined) {
      jobs.delete(job);
      counts.cancelled++;
      settleIdle();
      return;
    }
    // The rest of the job stays queued, as one job, to start once this piece is under way.
    if (first.to < job.to && firstOpen(first.to + 1, job.to) !== undefined) {
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
    if (ok) removeOpen(job.from, job.to);
    if (!ok) {
      const rest = stillOpen(job.from, job.to);
      if (job.attempt >= retries) {
        givenUp = rest;
        for (const r of rest) {
          removeOpen(r.from, r.to);
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

  function removeOpen(from: number, to: number): void {
    const next: GapRange[] = [];
    for (const r of open) {
      if (r.to < from || r.from > to) next.push(r);
      else {
        if (r.from < from) next.push({ from: r.from, to: from - 1 });
        if (r.to > to) next.push({ from: to + 1, to: r.to });
      }
    }
    open = next;
  }

  function addOpen(from: number, to: number): GapRange[] {
    // Returns the parts that were not open yet (those need a request).
    const fresh: GapRange[] = [];
    let s = from;
    for (const r of open) {
      if (r.to < s) continue;
      if (r.from > to) break;
      if (r.from > s) fresh.push({ from: s, to: r.from - 1 });
      s = r.to + 1;
      if (s > to) break;
    }
    if (s <= to) fresh.push({ from: s, to });
    const merged = [...open, { from, to }].sort((a, b) => a.from - b.from);
    open = [];
    for (const r of merged) {
      const last = open[open.length - 1];
      if (last !== undefined && r.from <= last.to + 1)
        open[open.length - 1] = { from: last.from, to: Math.max(last.to, r.to) };
      else open.push(r);
    }
    return fresh;
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
        for (const fresh of addOpen(g.from, g.to).flatMap((r) => notInJobs(r.from, r.to))) {
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
      }
      schedulePump();
    },
    fill(seq) {
      if (!isSeq(seq)) throw new InvalidArgumentError('seq', 'a non-negative safe integer', seq);
      removeOpen(seq, seq);
      for (const job of [...jobs]) {
        if (seq < job.from || seq > job.to) continue;
        if (firstOpen(job.from, job.to) !== undefined) continue;
        // Every number of this job came late: drop it, abort it if it is in flight.
        jobs.delete(job);
        counts.cancelled++;
        if (job.timer !== undefined) clearTimeout(job.timer);
        job.controller?.abort();
      }
      settleIdle();
    },
    pending: () => open.map((r) => ({ ...r })),
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
      open = [];
      settleIdle();
    },
  };
}

/** A sequence number as a reorder buffer takes it (the gaps a compensator gets come from one). */
function isSeq(v: unknown): v is number {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}
