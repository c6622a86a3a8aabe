import { type Duration, parseDuration } from './duration.js';
import { InvalidArgumentError, InvalidOptionError } from './errors.js';
import { timerDelay } from './timer-delay.js';
import { isPlainObject, keysOf, knownKeys } from './validate.js';

const TICKER_OPTIONS = keysOf<TickerOptions>({ every: true, align: true, onTick: true, now: true });

/** Options of {@link ticker}. */
export interface TickerOptions {
  /** Time between ticks. */
  every: Duration;
  /**
   * `true` (default): ticks fall on multiples of `every` since the Unix epoch (every node of a
   * cluster ticks at the same instants: `'1s'` ticks on whole seconds). A duration: that offset
   * from those multiples (`every: '1m', align: '5s'` ticks at hh:mm:05). `false`: multiples of
   * `every` from the start.
   */
  align?: boolean | Duration;
  /** Called at each tick. */
  onTick: (tick: Tick) => void;
  /** Wall clock in ms. Default `Date.now`. */
  now?: () => number;
}

/** One tick. */
export interface Tick {
  /** The scheduled instant (a multiple of `every`, plus the offset): never drifts. */
  readonly at: number;
  /** How late the callback ran. */
  readonly lateMs: number;
  /** Ticks skipped because the process was busy past them (they are not replayed). */
  readonly missed: number;
}

/** A running ticker. */
export interface Ticker {
  /** The next scheduled instant. */
  readonly next: number;
  stop(): void;
}

/**
 * The first tick instant strictly after `now`: the next `offset + k·every`. Pure.
 *
 * @example
 * ```ts
 * nextTickAt(12_345, 1000, 0);   // 13000
 * nextTickAt(13_000, 1000, 0);   // 14000
 * nextTickAt(12_345, 60_000, 5000); // 65000
 * ```
 */
export function nextTickAt(now: number, every: number, offset: number): number {
  // Milliseconds as numbers (ticker() reads durations into them): a string would concatenate.
  finiteMs('now', now);
  if (finiteMs('every', every, 'a positive, finite number of milliseconds') <= 0) {
    throw new InvalidArgumentError('every', 'a positive, finite number of milliseconds', every);
  }
  finiteMs('offset', offset);
  const phase = (((now - offset) % every) + every) % every;
  return now - phase + every;
}

/**
 * Aligned ticks that do not drift: each timer is set for the next scheduled instant computed
 * from the clock, never as "previous + every" (setInterval drifts by each callback's lateness
 * and never catches up). A tick delayed past later instants reports them as `missed`.
 *
 * @example
 * ```ts
 * const ticks: number[] = [];
 * const t = ticker({ every: '10ms', onTick: (tick) => ticks.push(tick.at) });
 * await new Promise((resolve) => setTimeout(resolve, 60));
 * t.stop();
 * ticks.every((at) => at % 10 === 0); // true
 * ```
 */
export function ticker(options: TickerOptions): Ticker {
  if (!isPlainObject(options))
    throw new InvalidOptionError('options', 'an object like { every, onTick }', options);
  knownKeys('', options, TICKER_OPTIONS);
  const every = parseDuration(options.every, 'every');
  if (every <= 0) throw new InvalidOptionError('every', 'a positive duration', options.every);
  if (typeof options.onTick !== 'function')
    throw new InvalidOptionError('onTick', 'a function', options.onTick);
  const now = options.now ?? Date.now;
  if (typeof now !== 'function') throw new InvalidOptionError('now', 'a function returning ms', now);
  const first = now();
  if (typeof first !== 'number' || !Number.isFinite(first)) {
    throw new InvalidOptionError('now', 'a function returning a finite number of ms', first);
  }
  const align = options.align ?? true;
  let offset: number;
  if (align === true) offset = 0;
  else if (align === false) offset = first % every;
  else {
    offset = parseDuration(align, 'align');
    if (offset >= every)
      throw new InvalidOptionError('align', `an offset shorter than every (${every} ms)`, align);
  }
  let next = nextTickAt(first, every, offset);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const arm = () => {
    // setTimeout takes at most 2^31 - 1 ms (~24.8 days); a longer wait is made of several.
    timer = setTimeout(fire, timerDelay(next - now()));
  };
  const fire = () => {
    if (stopped) return;
    const t = now();
    // A reading that is not a number makes no tick (a NaN tick, then a 1 ms loop): try again later.
    if (!Number.isFinite(t)) {
      timer = setTimeout(fire, timerDelay(every));
      return;
    }
    if (t < next) {
      // Timers may fire a little early (or a long wait was cut): wait on. More than a tick early,
      // the wall clock stepped back: the ticks re-align to it (waiting for the old `next` would
      // leave every node silent for as long as the step).
      if (next - t > every) next = nextTickAt(t, every, offset);
      return arm();
    }
    const at = next;
    next = nextTickAt(t, every, offset);
    const missed = (next - at) / every - 1;
    arm();
    options.onTick({ at, lateMs: t - at, missed });
  };
  arm();
  return {
    get next() {
      return next;
    },
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}

function finiteMs(name: string, value: unknown, expected = 'a finite number of milliseconds'): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(name, expected, value);
  }
  return value;
}
