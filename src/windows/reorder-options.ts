import { anchoredClock, type Clock } from '../core/clock.js';
import { parseDuration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { type Emit, observing } from '../core/observer.js';
import { isPlainObject, keysOf, knownKeys, nonNegativeInt, positiveInt } from '../core/validate.js';
import { AdaptiveTimeout, type AdaptiveTimeoutOptions } from './adaptive-timeout.js';
import type { ReorderBufferOptions } from './reorder-types.js';

/** See the end of {@link resolveReorderOptions}: the slots are allocated up front. */
const MAX_CAPACITY = 2 ** 24;

// 65 536 missing numbers: at 10 000 events/s with 1% lost and a compensation lane that gives up
// after ~10 minutes, 60 000 numbers are outstanding at most; a range costs ~50 bytes, however long.
const DEFAULT_MAX_MISSING = 65_536;

/** Every key of {@link ReorderBufferOptions} (a reorderer's options hold them too). */
export const REORDER_BUFFER_OPTIONS = keysOf<ReorderBufferOptions>({
  next: true,
  capacity: true,
  gapTimeout: true,
  adaptive: true,
  overflow: true,
  maxMissing: true,
  clock: true,
  observer: true,
});

/** A {@link ReorderBufferOptions} checked, with every default filled in. */
export interface ReorderConfig {
  readonly capacity: number;
  readonly next: number;
  readonly overflow: 'advance' | 'reject';
  readonly maxMissing: number;
  readonly clock: Clock;
  /** The fixed gap timeout (ms); 0 when it is `'adaptive'`. */
  readonly fixedTimeoutMs: number;
  /** The adaptive timeout, made from `adaptiveOptions`, when the gap timeout is `'adaptive'`. */
  readonly adaptive: AdaptiveTimeout | undefined;
  readonly adaptiveOptions: AdaptiveTimeoutOptions;
  readonly emit: Emit | undefined;
}

/** Checks a reorder buffer's options (each error names the option) and fills in the defaults. */
export function resolveReorderOptions(options: ReorderBufferOptions): ReorderConfig {
  if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, REORDER_BUFFER_OPTIONS);
  const capacity = positiveInt('capacity', options.capacity);
  const next = nonNegativeInt('next', options.next ?? 0);
  const overflow = options.overflow ?? 'advance';
  if (overflow !== 'advance' && overflow !== 'reject') {
    throw new InvalidOptionError('overflow', "'advance' or 'reject'", options.overflow);
  }
  const maxMissing = nonNegativeInt('maxMissing', options.maxMissing ?? DEFAULT_MAX_MISSING);
  const clock = options.clock ?? anchoredClock();
  if (typeof clock?.now !== 'function') {
    throw new InvalidOptionError('clock', 'an object with now()', options.clock);
  }
  const emit = observing(options.observer, 'observer');
  const given = options.adaptive ?? {};
  // The buffer's observer hears its adaptive timeout too, unless that has one of its own.
  const adaptiveOptions =
    emit !== undefined && isPlainObject(given) && given.observer === undefined
      ? { ...given, observer: options.observer }
      : given;
  let adaptive: AdaptiveTimeout | undefined;
  let fixedTimeoutMs = 0;
  if (options.gapTimeout === 'adaptive') {
    adaptive = new AdaptiveTimeout(adaptiveOptions); // checks its options
  } else {
    if (options.adaptive !== undefined) {
      throw new InvalidOptionError('adaptive', "absent unless gapTimeout is 'adaptive'", options.adaptive);
    }
    fixedTimeoutMs = parseDuration(options.gapTimeout, 'gapTimeout');
  }
  // The slots are allocated up front, 16 bytes each (an element and a Float64 time): 2^24 slots
  // are 268 MB, already far beyond any source's displacement bound (a capacity is derived from
  // it); past that a typo would be an out-of-memory crash, not an error. Checked last: with
  // several bad options, one of the wrong form is reported before a capacity that is only too large.
  if (capacity > MAX_CAPACITY) {
    throw new InvalidOptionError('capacity', `at most 2^24 (${MAX_CAPACITY})`, options.capacity);
  }
  return { capacity, next, overflow, maxMissing, clock, fixedTimeoutMs, adaptive, adaptiveOptions, emit };
}
