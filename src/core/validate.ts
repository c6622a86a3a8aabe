import { InvalidArgumentError, InvalidOptionError } from './errors.js';

/** Asserts a positive safe integer option (capacities, limits). */
export function positiveInt(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidOptionError(option, 'a positive safe integer', value);
  }
  return value;
}

/** Asserts a non-negative safe integer option. */
export function nonNegativeInt(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidOptionError(option, 'a non-negative safe integer', value);
  }
  return value;
}

/**
 * Asserts a non-empty, well-formed string option (a name or an id that becomes part of store keys
 * or headers): a lone surrogate is refused for the reason {@link nonEmptyStringArg} gives.
 */
export function nonEmptyString(option: string, value: unknown): string {
  if (!isNonEmptyWellFormed(value)) throw new InvalidOptionError(option, NON_EMPTY_STRING, value);
  return value;
}

/**
 * Asserts a non-empty, well-formed string argument (owner, signature, scope, key). A lone
 * surrogate has no UTF-8 form: a store that writes UTF-8 (Redis, PostgreSQL) would turn every one
 * into U+FFFD, so two different ids would meet. It is refused in every store alike.
 */
export function nonEmptyStringArg(path: string, value: unknown): string {
  if (!isNonEmptyWellFormed(value)) throw new InvalidArgumentError(path, NON_EMPTY_STRING, value);
  return value;
}

const NON_EMPTY_STRING = 'a non-empty, well-formed Unicode string (no lone surrogate)';

function isNonEmptyWellFormed(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && isWellFormed(value);
}

/** `String.prototype.isWellFormed` (Node >= 20; the compile target's lib does not declare it yet). */
export function isWellFormed(value: string): boolean {
  return (value as string & { isWellFormed(): boolean }).isWellFormed();
}

/** An order key: a safe integer or a bigint, compared numerically. */
export type Order = number | bigint;

/** Asserts an order key argument, or `undefined`. */
export function optionalOrder(path: string, value: unknown): Order | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  throw new InvalidArgumentError(path, 'a safe integer or a bigint', value);
}

/** A money amount or counter change: a bigint, or a safe integer that is turned into one. */
export function amount(path: string, value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  throw new InvalidArgumentError(path, 'a bigint or a safe integer (money is integer minor units)', value);
}

/** True for `{}`-style objects (not arrays, not class instances such as Map or Date). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  let proto: unknown;
  try {
    proto = Object.getPrototypeOf(value);
  } catch {
    return false; // a revoked Proxy
  }
  return proto === Object.prototype || proto === null;
}

/** Orders compare numerically across `number` and `bigint`. */
export function orderToString(order: Order): string {
  return typeof order === 'bigint' ? order.toString() : String(order);
}

/** The inverse of {@link orderToString}: a safe integer when it fits, a bigint otherwise. */
export function orderFromString(text: string): Order {
  const big = BigInt(text);
  return big <= BigInt(Number.MAX_SAFE_INTEGER) && big >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(big) : big;
}

// Option names an earlier release used, to the name that replaced them: the refusal then names it
// however far apart the spellings are.
const RENAMED: Readonly<Record<string, string>> = { onEvent: 'observer' };

/**
 * Refuses an options object that holds a key outside `known`, naming the closest known key: a
 * JavaScript caller's typo (`blokDuration`) would otherwise change nothing and say nothing.
 * Call it first in a factory, before any option is read, so a refused call changes no state.
 *
 * @param where the options' path in messages (`''` for a factory's own options, `'retry'` for a
 *   nested object: its keys are then named `retry.<key>`)
 * @param kind `'option'` (default) throws `ERR_INVALID_OPTION`; `'argument'` throws
 *   `ERR_INVALID_ARGUMENT`, for an object a call is given (a ledger entry, a call's options)
 *
 * Internal (not exported from the package): `knownKeys('', { capcity: 4 }, ['capacity', 'store'])`
 * throws `Expected \`capcity\` to be a known option (did you mean \`capacity\`?), got \`4\` (number)`.
 */
export function knownKeys(
  where: string,
  options: object,
  known: readonly string[],
  kind: 'option' | 'argument' = 'option',
): void {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const name = where === '' ? key : `${where}.${key}`;
    const renamed = RENAMED[key];
    const near = renamed !== undefined && known.includes(renamed) ? renamed : closest(key, known);
    const hint =
      near === undefined ? `one of ${known.map((k) => `\`${k}\``).join(', ')}` : `did you mean \`${near}\`?`;
    const got = (options as Record<string, unknown>)[key];
    if (kind === 'argument') throw new InvalidArgumentError(name, `a known field (${hint})`, got);
    throw new InvalidOptionError(name, `a known option (${hint})`, got);
  }
}

/**
 * The keys of an options type, for {@link knownKeys}: given as an object of every key of `T`, so
 * a key added to the type but not here (or here but not in the type) fails to compile, and the
 * list cannot drift from the type. Internal: `keysOf<{ capacity: number; store?: object }>({ capacity: true, store: true })`
 * is `['capacity', 'store']`.
 */
export function keysOf<T extends object>(
  keys: { readonly [K in keyof T & string]-?: true },
): readonly string[] {
  return Object.freeze(Object.keys(keys));
}

/**
 * The known name `key` is most likely a typo of, case-insensitively, or `undefined`: a name within
 * a third of its length (at least 2) edits of a known one is taken for a typo of it; further off,
 * callers list every known name instead of guessing. Internal (options objects and CLI flags):
 * `closest('capacty', ['capacity', 'store'])` is `'capacity'`.
 */
export function closest(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1;
  const lower = key.toLowerCase();
  for (const candidate of known) {
    const d = editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

// Levenshtein distance. A key over 64 characters is no typo of an option name (none is half as
// long): it is not compared, which bounds the work at 64 x the longest known name.
function editDistance(a: string, b: string): number {
  if (a.length > 64) return Number.POSITIVE_INFINITY;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(
        (prev[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = row;
  }
  return prev[b.length] as number;
}
