import { InvalidDurationError } from './errors.js';

/** A duration: `'250ms' | '3s' | '1m' | '1h' | '1d'` or a number of milliseconds. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
// As the Duration type says: digits, then the unit, nothing around or between (no space, tab,
// NBSP or BOM: a config value with stray whitespace is a typo worth naming).
const PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * Reads a duration into whole milliseconds. Accepts a non-negative integer number of
 * milliseconds or a string with one unit (`ms`, `s`, `m`, `h`, `d`); fractions are allowed when
 * they land on a whole millisecond (`'1.5s'` is 1500, `'0.5ms'` is an error).
 *
 * @param option the option name used in the error message when the input is invalid
 * @example
 * ```ts
 * parseDuration('500ms'); // 500
 * parseDuration('3s');    // 3000
 * parseDuration('1m');    // 60000
 * parseDuration(1500);    // 1500
 * ```
 */
export function parseDuration(input: Duration | string | number, option = 'duration'): number {
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input)) {
      throw new InvalidDurationError(option, input, 'a number must be a whole count of milliseconds');
    }
    if (input < 0) throw new InvalidDurationError(option, input, 'it must not be negative');
    return input === 0 ? 0 : input; // -0 passes both checks above; hand back a plain 0
  }
  if (typeof input !== 'string') {
    throw new InvalidDurationError(option, input, 'a string or a number is needed');
  }
  const match = PATTERN.exec(input);
  if (!match) {
    throw new InvalidDurationError(option, input, 'one number followed by one of ms, s, m, h, d');
  }
  // Exact decimal arithmetic: a float product with a tolerance would read '1.0000000001s' as 1000
  // and '0.0000000001ms' as 0, though neither lands on a whole millisecond.
  const [whole = '0', fraction = ''] = (match[1] as string).split('.');
  const scale = 10n ** BigInt(fraction.length);
  const scaled = BigInt(whole + fraction) * BigInt(UNIT_MS[match[2] as keyof typeof UNIT_MS]);
  if (scaled % scale !== 0n) {
    throw new InvalidDurationError(option, input, 'it must be a whole number of milliseconds');
  }
  const ms = scaled / scale;
  if (ms > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new InvalidDurationError(option, input, 'it is too large');
  }
  return Number(ms);
}
