import { type Duration, parseDuration } from './duration.js';
import { InvalidOptionError } from './errors.js';

/**
 * A window described once, in whole milliseconds: its length, how far it moves per step (the
 * slide), and the granularity it is counted in (the bucket of a `sliding-window` limiter). Built
 * with {@link window}; immutable: each method returns a new config.
 *
 * Rules, checked at every step: length > 0; 0 < slide <= length (slide = length is a tumbling
 * window); the granularity divides both the length and the slide, so every bucket lies wholly
 * inside one step and the window is a whole number of buckets.
 */
export interface WindowConfig {
  readonly kind: 'window';
  readonly lengthMs: number;
  /** Default: the length (tumbling). */
  readonly slideMs: number;
  /**
   * Default: the largest bucket that divides both the length and the slide (their greatest common
   * divisor: `window('3s').slide('2s')` counts in 1 s buckets; the slide itself when it divides the
   * length).
   */
  readonly granularityMs: number;
  /** Buckets per window: `lengthMs / granularityMs`. */
  readonly buckets: number;
  /** The same window moving by `step`. */
  slide(step: Duration): WindowConfig;
  /** The same window counted in buckets of `bucket`. */
  granularity(bucket: Duration): WindowConfig;
  /** Start of the bucket holding `t`. */
  bucketStart(t: number): number;
  /** `{ length, slide, granularity }` in milliseconds. */
  toJSON(): { length: number; slide: number; granularity: number };
}

/**
 * Starts a window config (the window-config DSL of the seeds).
 *
 * @example
 * ```ts
 * const w = window('3s').slide('1s').granularity('500ms');
 * w.toJSON(); // { length: 3000, slide: 1000, granularity: 500 }
 * w.buckets;  // 6
 * window('1m').buckets; // 1
 * ```
 */
export function window(length: Duration): WindowConfig {
  const ms = parseDuration(length, 'window');
  if (ms <= 0) throw new InvalidOptionError('window', 'a positive duration', length);
  return make(ms, ms, ms, false);
}

function make(
  lengthMs: number,
  slideMs: number,
  granularityMs: number,
  explicitGranularity: boolean,
): WindowConfig {
  if (slideMs <= 0 || slideMs > lengthMs) {
    throw new InvalidOptionError(
      'slide',
      `a positive duration no longer than the window (${lengthMs} ms)`,
      slideMs,
    );
  }
  if (granularityMs <= 0 || lengthMs % granularityMs !== 0 || slideMs % granularityMs !== 0) {
    throw new InvalidOptionError(
      'granularity',
      `a positive duration that divides the window (${lengthMs} ms) and the slide (${slideMs} ms)`,
      granularityMs,
    );
  }
  return Object.freeze({
    kind: 'window' as const,
    lengthMs,
    slideMs,
    granularityMs,
    buckets: lengthMs / granularityMs,
    // Until a granularity is set, it follows the slide: the largest bucket that divides both the
    // window and the slide (the slide itself when it divides the window), so the order of
    // .slide() and .granularity() does not matter.
    slide: (step: Duration) => {
      const s = parseDuration(step, 'slide');
      const implicit = s > 0 ? gcd(lengthMs, s) : s;
      return make(lengthMs, s, explicitGranularity ? granularityMs : implicit, explicitGranularity);
    },
    granularity: (bucket: Duration) => make(lengthMs, slideMs, parseDuration(bucket, 'granularity'), true),
    bucketStart: (t: number) => t - (((t % granularityMs) + granularityMs) % granularityMs),
    toJSON: () => ({ length: lengthMs, slide: slideMs, granularity: granularityMs }),
  });
}

/**
 * True for a config made by {@link window} (checked by shape: works across package copies).
 * Internal: the limiter's option check (`window: '1m'` or `window('1m')...`).
 */
export function isWindowConfig(value: unknown): value is WindowConfig {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'window';
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
