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
  if (typeof value !== 'string' || value.length === 0 || !isWellFormed(value)) {
    throw new InvalidOptionError(
      option,
      'a non-empty, well-formed Unicode string (no lone surrogate)',
      value,
    );
  }
  return value;
}

/**
 * Asserts a non-empty, well-formed string argument (owner, signature, scope, key). A lone
 * surrogate has no UTF-8 form: a store that writes UTF-8 (Redis, PostgreSQL) would turn every one
 * into U+FFFD, so two different ids would meet. It is refused in every store alike.
 */
export function nonEmptyStringArg(path: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || !isWellFormed(value)) {
    throw new InvalidArgumentError(
      path,
      'a non-empty, well-formed Unicode string (no lone surrogate)',
      value,
    );
  }
  return value;
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
