import { performance } from 'node:perf_hooks';
import type { Duration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { timerDelay, timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';

/**
 * How long this node's event loop has been blocked, in total: time in which it could read no
 * socket, so a client's silence in it is the node's fault, not the client's.
 */
export interface StallMeter {
  /**
   * Milliseconds stalled since the meter started, including a stall still going on at the call
   * (a check that runs right after a 2 s block sees that block). Never decreases, and grows no
   * faster than the monotonic clock it is read against.
   */
  stalledMs(): number;
}

/** A {@link StallMeter} that runs a timer; `stop()` ends it. */
export interface DriftStallMeter extends StallMeter {
  stop(): void;
}

/** Options of {@link createStallMeter}. */
export interface StallMeterOptions {
  /**
   * The drift timer's period. Default `'50ms'`: a stall is counted short by at most this much (the
   * part of a block that ends before the next tick was due delays nothing the meter sees), and 20
   * wake-ups a second cost nothing measurable. Bounds: 1 ms to 2^31 - 1 ms.
   */
  resolution?: Duration;
  /** Monotonic clock in ms. Default `performance.now` (never the wall clock, which can step). */
  now?: () => number;
}

const STALL_OPTIONS = keysOf<StallMeterOptions>({ resolution: true, now: true });

/**
 * A tick-drift stall meter: a timer due every `resolution` ms whose lateness accumulates as
 * stalled ms. A timer's lateness is exactly the time the loop could not run it, so the sum is an
 * exact running total (short of at most `resolution` per stall), and the lateness of the tick that
 * is overdue right now is added at each reading, so a reading taken in the same task that ends a
 * block already counts it.
 *
 * `perf_hooks.monitorEventLoopDelay` is not used: it gives a histogram of delays (min, max, mean,
 * percentiles), not a total per interval, so "how much of this client's silence was ours" cannot
 * be read from it; and its samples are taken by its own timer, so a block still going on (or just
 * ended and not yet sampled) is invisible to a check.
 *
 * The timer is `unref`ed: a meter keeps no process alive.
 *
 * Example (internal until the gateway ships; its unit test runs this):
 * ```ts
 * const meter = createStallMeter({ resolution: '20ms' });
 * const end = performance.now() + 100;
 * while (performance.now() < end); // the loop is blocked for 100 ms
 * meter.stalledMs() >= 80; // true
 * meter.stop();
 * ```
 */
export function createStallMeter(options: StallMeterOptions = {}): DriftStallMeter {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { resolution }', options);
  knownKeys('', options, STALL_OPTIONS);
  const resolution = timerDuration('resolution', options.resolution ?? DEFAULT_RESOLUTION);
  if (resolution < 1)
    throw new InvalidOptionError('resolution', 'a duration of at least 1 ms', options.resolution);
  const now = options.now ?? (() => performance.now());
  if (typeof now !== 'function')
    throw new InvalidOptionError('now', 'a function returning monotonic ms', now);
  let stalled = 0;
  let due = now() + resolution;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const overdue = (t: number) => Math.max(0, t - due);
  const fire = () => {
    const t = now();
    stalled += overdue(t);
    due = t + resolution;
    arm();
  };
  const arm = () => {
    timer = setTimeout(fire, timerDelay(resolution));
    timer.unref();
  };
  arm();
  return {
    stalledMs: () => stalled + overdue(now()),
    stop() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}

const DEFAULT_RESOLUTION = 50;

let shared: DriftStallMeter | undefined;

/**
 * The process's one drift meter, started on first use: every judge of the process shares it (the
 * loop they measure is the same), so a node runs one meter timer however many it has.
 */
export function processStallMeter(): StallMeter {
  shared ??= createStallMeter();
  return shared;
}
