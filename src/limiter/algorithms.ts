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

/** One letter per algorithm, in key names and in the Lua script's arguments. */
export const ALGORITHM_CODE: { readonly [A in Algorithm]: string } = {
  'sliding-log': 'l',
  'sliding-window': 's',
  'fixed-window': 'f',
  gcra: 'g',
};

/**
 * The last part of a limit's key: algorithm, window and parameter. A limiter whose limit changes
 * shape (another algorithm, window, bucket or burst) starts on fresh keys instead of reading a
 * state of another shape; the old keys run out on their TTL.
 */
export function specSuffix(spec: LimitSpec): string {
  const base = `${ALGORITHM_CODE[spec.algorithm]}${spec.windowMs}`;
  return spec.param > 0 ? `${base}.${spec.param}` : base;
}
