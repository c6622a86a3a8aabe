// Options shared by createMetrics and createOtelMetrics: the label cap and the name prefix.
import { InvalidOptionError } from '../core/errors.js';
import { DEFAULT_MAX_LABEL_VALUES, MAX_LABEL_VALUES_LIMIT } from './labels.js';

/** `maxLabelValues`: a whole number in 1..10,000 (see labels.ts for the default and the bound). */
export function maxLabelValuesOption(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_LABEL_VALUES;
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 1 ||
    value > MAX_LABEL_VALUES_LIMIT
  ) {
    throw new InvalidOptionError(
      'maxLabelValues',
      `a whole number from 1 to ${MAX_LABEL_VALUES_LIMIT}`,
      value,
    );
  }
  return value;
}

/** A name prefix matching `pattern` (`''` allowed), or `fallback` when undefined. */
export function prefixOption(value: unknown, pattern: RegExp, expected: string, fallback: string): string {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value.length > 64 || (value !== '' && !pattern.test(value))) {
    throw new InvalidOptionError('prefix', expected, value);
  }
  return value;
}
