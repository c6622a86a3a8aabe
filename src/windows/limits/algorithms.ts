import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import type { Algorithm, AlgorithmMath, LimitSpec } from './types.js';

/** The math of each algorithm, by name. */
export const MATH: { readonly [A in Algorithm]: AlgorithmMath<unknown> } = {
  'sliding-log': slidingLog as AlgorithmMath<unknown>,
  'sliding-window': slidingWindow as AlgorithmMath<unknown>,
  'fixed-window': fixedWindow as AlgorithmMath<unknown>,
  gcra: gcra as AlgorithmMath<unknown>,
};

/** One letter per algorithm, in key names and in the Lua script's arguments (see {@link codeOf}). */
export const ALGORITHM_CODE: { readonly [A in Algorithm]: string } = {
  'sliding-log': 'd',
  'sliding-window': 'w',
  'fixed-window': 'f',
  gcra: 'g',
};

/**
 * Above this limit a sliding log is kept on Redis as a sorted set (code `z`), at or below it as
 * one string (code `d`): the string is copied on every admitted request, so its cost grows with
 * the limit while the sorted set's stays flat. 512 is the measured crossover (derivation beside
 * the sliding-log functions in src/redis/lua/lib/sliding-log.lua, `node scripts/sliding-log-cost.mjs`).
 */
export const STRING_LOG_MAX = 512;

/**
 * The letter of a limit in key names and in the Lua script's arguments: its algorithm's, except
 * a sliding log above {@link STRING_LOG_MAX}, which is `z`. A state of another representation is
 * then never read as this one: limits that share an `id` but not a representation get apart keys.
 */
export function codeOf(spec: LimitSpec): string {
  return spec.algorithm === 'sliding-log' && spec.limit > STRING_LOG_MAX
    ? 'z'
    : ALGORITHM_CODE[spec.algorithm];
}

/**
 * The last part of a limit's key: algorithm (with the sliding log's representation), window and
 * parameter (for GCRA also the rate). A limiter whose limit changes shape (another algorithm,
 * window, bucket, burst or GCRA rate, or a sliding log crossing {@link STRING_LOG_MAX}) starts on
 * fresh keys instead of reading a state of another shape; the old keys run out on their TTL.
 */
export function specSuffix(spec: LimitSpec): string {
  const base = `${codeOf(spec)}${spec.windowMs}`;
  // GCRA's state is a time in units of window / limit: read under another rate it would be wrong
  // (a burst given explicitly does not change with the rate), so its key names the rate too.
  if (spec.algorithm === 'gcra') return `${base}.${spec.param}.${spec.limit}`;
  return spec.param > 0 ? `${base}.${spec.param}` : base;
}
