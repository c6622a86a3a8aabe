import type { Duration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { type Observer, observing } from '../core/observer.js';
import { timerDuration } from '../core/timer-delay.js';
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
  /**
   * Called once per range still unfilled after the last retry: the place to alert. A view of the
   * `compensator.give-up` events: the same ranges, at the same moment.
   */
  onGiveUp?: (range: GapRange, error: unknown) => void;
  /**
   * Told the lane's work: ranges queued (`compensator.gap`), retries, ranges done (`filled`: the
   * source accepted the request, or late arrivals filled them) and given up (`give-up`), each
   * with the backlog after it. See docs/observability.md.
   */
  observer?: Observer;
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
  observer: true,
});
const BACKOFF_OPTIONS = keysOf<NonNullable<CompensatorOptions['backoff']>>({
  initial: true,
  max: true,
  factor: true,
});

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

/** The options, checked, with their defaults. */
export function checkOptions(options: CompensatorOptions) {
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
  const emit = observing(options.observer, 'observer');
  return {
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
  };
}
