import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { optionWithinLimit } from '../core/limits.js';
import { isPlainObject, nonEmptyString, positiveInt } from '../core/validate.js';
import { isWindowConfig, type WindowConfig } from '../core/window-config.js';
import { MAX_BLOCK_MS } from '../windows/limits/adjust.js';
import { ALGORITHMS, MAX_BUCKETS, MAX_LOG_LIMIT, MAX_PRODUCT } from '../windows/limits/spec.js';
import type { Algorithm, LimitSpec } from '../windows/limits/types.js';

/** One limit of a limiter. */
export interface LimitOptions {
  /** Names the limit in results and headers. Default: `'<limit>/<window>'`, e.g. `'100/1m'`. */
  id?: string;
  algorithm: Algorithm;
  /** Cost admitted per window (for `gcra`, the rate: `limit` per `window`). */
  limit: number;
  /** `'1s'`, `60_000`, or `window('1m').granularity('1s')` (the bucket of `sliding-window`). */
  window: Duration | WindowConfig;
  /** `sliding-window` only: bucket length; divides the window. Default: the window's granularity. */
  granularity?: Duration;
  /** `gcra` only: the largest cost admitted at once. Default: `limit`. */
  burst?: number;
  /**
   * Which subject this limit counts by, when `take` is given several (`{ user, ip }`). Limits
   * without `by` count by the plain key.
   */
  by?: string;
  /**
   * After this limit refuses a take, the subject stays blocked in it for this long (`'1m'`; at
   * most a year): every take until then is refused, on every process (rate-limiter-flexible's
   * `blockDuration`). Needs a store with `limiterAdjust` (all built-in stores). Default: none.
   */
  blockDuration?: Duration;
}

/** Validates one limit into a spec; `path` prefixes option names in errors (`limits[1].window`). */
export function toSpec(options: LimitOptions, path: string): LimitSpec & { by: string | undefined } {
  if (!isPlainObject(options)) throw new InvalidOptionError(path || 'options', 'an object', options);
  const at = (name: string) => (path ? `${path}.${name}` : name);
  if (!ALGORITHMS.includes(options.algorithm)) {
    throw new InvalidOptionError(
      at('algorithm'),
      `one of ${ALGORITHMS.map((a) => `'${a}'`).join(', ')}`,
      options.algorithm,
    );
  }
  const limit = positiveInt(at('limit'), options.limit);
  const config = isWindowConfig(options.window) ? checkedConfig(options.window, at('window')) : undefined;
  const windowMs = config ? config.lengthMs : parseDuration(options.window as Duration, at('window'));
  if (windowMs <= 0) throw new InvalidOptionError(at('window'), 'a positive duration', options.window);
  let param = 0;
  if (options.algorithm === 'sliding-window') {
    param =
      options.granularity !== undefined
        ? parseDuration(options.granularity, at('granularity'))
        : (config?.granularityMs ?? windowMs);
    // Two buckets named at once (window('1s').granularity('100ms') and granularity: '500ms'): which
    // was meant cannot be told.
    if (config !== undefined && config.granularityMs !== config.lengthMs && param !== config.granularityMs) {
      throw new InvalidOptionError(
        at('granularity'),
        `absent, or the window's own granularity (${config.granularityMs} ms)`,
        options.granularity,
      );
    }
    if (param <= 0 || windowMs % param !== 0) {
      throw new InvalidOptionError(
        at('granularity'),
        `a positive duration that divides the window (${windowMs} ms)`,
        options.granularity ?? param,
      );
    }
    if (windowMs / param > MAX_BUCKETS) {
      throw new InvalidOptionError(
        at('granularity'),
        `at most ${MAX_BUCKETS} buckets per window (${windowMs} ms / ${MAX_BUCKETS} = ${Math.ceil(windowMs / MAX_BUCKETS)} ms at least); for exactness use 'sliding-log'`,
        options.granularity ?? param,
      );
    }
  } else if (options.granularity !== undefined) {
    throw new InvalidOptionError(
      at('granularity'),
      "absent: only 'sliding-window' has buckets",
      options.granularity,
    );
  }
  if (config !== undefined) checkSlide(config, options.algorithm, param, at('window'));
  if (options.algorithm === 'gcra') {
    param = options.burst === undefined ? limit : positiveInt(at('burst'), options.burst);
  } else if (options.burst !== undefined) {
    throw new InvalidOptionError(at('burst'), "absent: only 'gcra' has a burst", options.burst);
  }
  if (options.algorithm === 'sliding-log' && limit > MAX_LOG_LIMIT) {
    throw new InvalidOptionError(at('limit'), 'at most 2^52 for a sliding log', limit);
  }
  if (limit * windowMs > MAX_PRODUCT) {
    throw new InvalidOptionError(
      at('limit'),
      'small enough that limit x window (ms) stays below 2^53',
      limit,
    );
  }
  // The other product each algorithm forms: burst x window (GCRA), limit x granularity (sliding
  // window, never larger than limit x window since the granularity divides the window).
  if (options.algorithm === 'gcra' && param * windowMs > MAX_PRODUCT) {
    throw new InvalidOptionError(
      at('burst'),
      'small enough that burst x window (ms) stays below 2^53',
      param,
    );
  }
  const by = options.by === undefined ? undefined : nonEmptyString(at('by'), options.by);
  const id =
    options.id === undefined
      ? `${limit}/${durationLabel(windowMs)}`
      : optionWithinLimit(at('id'), nonEmptyString(at('id'), options.id), 'nameBytes');
  let blockMs = 0;
  if (options.blockDuration !== undefined) {
    blockMs = parseDuration(options.blockDuration, at('blockDuration'));
    if (blockMs <= 0 || blockMs > MAX_BLOCK_MS) {
      throw new InvalidOptionError(
        at('blockDuration'),
        'a positive duration of at most a year',
        options.blockDuration,
      );
    }
  }
  return { id, algorithm: options.algorithm, limit, windowMs, param, blockMs, by };
}

/**
 * A window config as `window()` builds it: the object may have been built by hand (or parsed from
 * JSON), so its numbers are checked again. A NaN length admitted everything, a fractional one gave
 * fractional times.
 */
/**
 * A window's `slide` and `granularity` must mean what they say in the limit: the tumbling default (slide = length),
 * or for `sliding-window` its bucket (the window moves one bucket at a time). Anything else would
 * be ignored silently: a sliding log and GCRA slide continuously, a fixed window jumps by its
 * length, and a bucketed window moves by its bucket, whatever the slide said.
 */
function checkSlide(config: WindowConfig, algorithm: Algorithm, bucketMs: number, path: string): void {
  // A hand-built config without a slide is a tumbling one, as window() makes by default.
  const slide: unknown = config.slideMs ?? config.lengthMs;
  if (slide !== config.lengthMs && !(algorithm === 'sliding-window' && slide === bucketMs)) {
    throw new InvalidOptionError(
      `${path}.slide`,
      algorithm === 'sliding-window'
        ? `the bucket (${bucketMs} ms) or the whole window (${config.lengthMs} ms): a sliding-window limit moves one bucket at a time`
        : `the whole window (${config.lengthMs} ms): ${algorithm === 'fixed-window' ? 'a fixed window moves by its length' : `${algorithm} slides continuously`}; a moving window is 'sliding-window' with granularity()`,
      slide,
    );
  }
  // Buckets are the sliding window's alone: a granularity finer than the window would be ignored.
  if (algorithm !== 'sliding-window' && config.granularityMs !== config.lengthMs) {
    throw new InvalidOptionError(
      `${path}.granularity`,
      `the whole window (${config.lengthMs} ms): only 'sliding-window' has buckets`,
      config.granularityMs,
    );
  }
}

function checkedConfig(config: WindowConfig, path: string): WindowConfig {
  for (const field of ['lengthMs', 'granularityMs'] as const) {
    const v = config[field];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) {
      throw new InvalidOptionError(
        `${path}.${field}`,
        'a positive whole number of ms (build it with window())',
        v,
      );
    }
  }
  if (config.lengthMs % config.granularityMs !== 0) {
    throw new InvalidOptionError(
      `${path}.granularityMs`,
      `a duration that divides the window (${config.lengthMs} ms)`,
      config.granularityMs,
    );
  }
  return config;
}

/** `1000` → `'1s'`, `90000` → `'90s'`, `60000` → `'1m'`: the shortest exact spelling. */
export function durationLabel(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
