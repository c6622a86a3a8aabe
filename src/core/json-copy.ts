import { InvalidArgumentError } from './errors.js';
import { isPlainObject } from './validate.js';

/** A JSON value: what a store keeps as `meta` and in versioned rows, the same value everywhere. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

// 1 000 levels: far deeper than any record kept beside a ledger entry or a versioned row, and far from the stack's
// limit for this recursion (~10 000 frames on Node's default stack).
const MAX_JSON_DEPTH = 1000;

/**
 * A fresh copy of `value` as JSON, or a typed error naming the first place that is not JSON
 * (`path` names the value: `'meta'`, `'value'`). Every store must keep such a value as the same
 * value (the memory store clones it, the Redis store keeps its JSON text), so the copy is what JSON would give back: each property read once (a
 * getter cannot answer differently later), plain objects and arrays in place of proxies, array
 * elements by index only, `-0` as `0`. What JSON would drop or change silently (undefined, a
 * function, a symbol, a bigint, NaN, a Date, a Map, a hole, a cycle) is refused instead.
 */
export function jsonCopy(value: unknown, path: string): JsonValue {
  return copy(value, path, path, new Set(), 0);
}

function copy(value: unknown, root: string, path: string, ancestors: Set<object>, depth: number): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) notJson(path, value);
    return value === 0 ? 0 : value; // -0 too: JSON writes it as 0
  }
  if (typeof value !== 'object' || ancestors.has(value)) notJson(path, value);
  if (depth >= MAX_JSON_DEPTH) {
    // Named from the root: the path itself would be a thousand steps long.
    throw new InvalidArgumentError(root, `JSON nested at most ${MAX_JSON_DEPTH} levels deep`, value);
  }
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const length = value.length;
      const out: JsonValue[] = new Array(length);
      for (let i = 0; i < length; i++) {
        if (!(i in value)) notJson(`${path}[${i}]`, undefined);
        out[i] = copy(value[i], root, `${path}[${i}]`, ancestors, depth + 1);
      }
      return out;
    }
    if (!isPlainObject(value) || Object.getOwnPropertySymbols(value).length > 0) notJson(path, value);
    const out: { [key: string]: JsonValue } = {};
    for (const key of Object.keys(value)) {
      // An own `__proto__` (JSON.parse makes one) stays a property, not the copy's prototype.
      Object.defineProperty(out, key, {
        value: copy(value[key], root, `${path}.${key}`, ancestors, depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  } finally {
    ancestors.delete(value);
  }
}

function notJson(path: string, value: unknown): never {
  throw new InvalidArgumentError(
    path,
    'JSON: null, a boolean, a finite number, a string, an array or a plain object of these (no undefined, bigint, function, symbol, Date, Map, hole or cycle)',
    value,
  );
}
