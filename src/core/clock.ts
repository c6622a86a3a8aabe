import { InvalidArgumentError } from './errors.js';

/** A source of time in milliseconds. Pure algorithms take time as an argument; stores take a Clock. */
export interface Clock {
  /** Milliseconds, on whatever epoch the clock uses; only differences and order matter. */
  now(): number;
}

/**
 * A clock reading as whole milliseconds, or a typed error naming `what` (e.g. `'clock.now()'`):
 * a number within ±(2^53 - 1), floored. Taken as a time, a NaN makes every comparison false (a
 * limiter admits everything, a generator resets its sequence and repeats ids), and a fraction
 * would give Redis a fractional TTL: every reading is checked before it changes anything.
 */
export function wholeMs(reading: unknown, what: string): number {
  if (Number.isSafeInteger(reading)) return reading as number; // Date.now(), a FakeClock: one check
  if (typeof reading !== 'number' || !(Math.abs(reading) <= Number.MAX_SAFE_INTEGER)) {
    throw new InvalidArgumentError(what, 'a number of milliseconds within ±(2^53 - 1)', reading);
  }
  return Math.floor(reading);
}

/**
 * The wall clock (`Date.now()`).
 *
 * @example
 * ```ts
 * const store = memoryStore({ clock: systemClock });
 * ```
 */
export const systemClock: Clock = { now: () => Date.now() };

/**
 * Wall-clock milliseconds that never step: `Date.now()` read once, here, then advanced by the
 * monotonic `performance.now()` (whole ms). An NTP step of the wall clock at run time moves
 * nothing: a buffer's hole keeps its age, a generator its order. Across processes the readings
 * stay comparable (each is anchored on the wall clock when it was made).
 */
export function anchoredClock(): Clock {
  const wall = Date.now();
  const start = performance.now();
  return { now: () => Math.floor(wall + (performance.now() - start)) };
}

/**
 * A clock that moves only when told: for tests that must sit exactly on a window edge.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(1_000);
 * clock.advance(250);
 * clock.now(); // 1250
 * ```
 */
export class FakeClock implements Clock {
  #now: number;

  constructor(start = 0) {
    this.#now = check('start', start);
  }

  now(): number {
    return this.#now;
  }

  /** Moves the clock forward by `ms` (never backward: use {@link FakeClock.set} for that). */
  advance(ms: number): number {
    if (check('ms', ms) < 0) throw new InvalidArgumentError('ms', 'a non-negative number', ms);
    this.#now += ms;
    return this.#now;
  }

  /** Sets the time, backward included (to test clock rollback). */
  set(ms: number): void {
    this.#now = check('ms', ms);
  }
}

function check(path: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(path, 'a finite number of milliseconds', value);
  }
  return value;
}
