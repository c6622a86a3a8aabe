import { InvalidArgumentError } from '../core/errors.js';
import { isPlainObject } from '../core/validate.js';

/**
 * How an idempotent call's result is kept: `serialize` turns the value `fn` returned into the
 * text the store records, `deserialize` turns that text back into the value a replay answers.
 * Both run in the caller's process; `deserialize(serialize(v))` should equal `v`.
 *
 * @example
 * ```ts
 * // Keep a Map as its entries.
 * const mapSerializer: Serializer = {
 *   serialize: (value) => JSON.stringify([...(value as Map<string, number>)]),
 *   deserialize: (text) => new Map(JSON.parse(text)),
 * };
 * const idem = createIdempotency({ serializer: mapSerializer });
 * await idem.run({ key: 'k1' }, () => new Map([['a', 1]]));
 * const r = await idem.run({ key: 'k1' }, () => new Map());
 * r.outcome === 'replayed' && r.value; // new Map([['a', 1]])
 * ```
 */
export interface Serializer {
  serialize(value: unknown): string;
  deserialize(text: string): unknown;
}

// The tag of an encoded value: an object whose only keys are `$t` (and `v`). A plain object of
// the value that has a key of only `$` signs then `t` gets one `$` more, and loses it when read,
// so no value is ever read back as a tag: the encoding is injective.
const TAG = '$t';
const ESCAPED = /^\$+t$/;

/**
 * The default {@link Serializer}: JSON, where a `bigint` and a `Date` come back as themselves
 * (tagged, not as the string or number JSON would make of them) and a result of `undefined` is
 * kept too. Everything else reads back as `JSON.parse(JSON.stringify(value))` would give it: a
 * class instance as a plain object, `NaN` as `null`, an `undefined` property dropped. A function
 * or a symbol as the whole result, and a value with a cycle, are refused (`ERR_INVALID_ARGUMENT`
 * naming the path, as `value.self`, where the cycle closes).
 *
 * @example
 * ```ts
 * const text = jsonSerializer.serialize({ amount: 1234n, at: new Date(0) });
 * jsonSerializer.deserialize(text); // { amount: 1234n, at: new Date(0) }
 * jsonSerializer.deserialize(jsonSerializer.serialize(undefined)); // undefined
 * ```
 */
export const jsonSerializer: Serializer = Object.freeze({
  serialize(value: unknown): string {
    let text: string | undefined;
    try {
      text = JSON.stringify(value, replacer);
    } catch (err) {
      // JSON's own TypeError says "circular structure" without saying where: found again here,
      // by path, so the caller learns which property closes the cycle. Any other error (a
      // throwing toJSON or getter) is the value's own and goes on unchanged.
      const cycle = findCycle(value);
      if (cycle === undefined) throw err;
      const error = new InvalidArgumentError(
        cycle.at,
        `free of cycles (JSON cannot keep one): it refers back to \`${cycle.to}\``,
        cycle.value,
      );
      (error as { cause?: unknown }).cause = err;
      throw error;
    }
    if (text === undefined) {
      throw new InvalidArgumentError('value', 'a value JSON can keep (not a function or a symbol)', value);
    }
    return text;
  },
  deserialize(text: string): unknown {
    // The reviver changes only objects with a key of `$` signs then `t`, which JSON text holds as
    // `"$` or spelled with an escape (`\u0024`): text with neither reads the same without it, and
    // JSON.parse with a reviver costs ~3-5x more (a call per value; a stream consumer decodes
    // every entry with it).
    if (!text.includes('"$') && !text.includes('\\u')) return JSON.parse(text);
    return JSON.parse(text, reviver);
  },
});

// The whole result `undefined` (JSON has no text for it).
const UNDEFINED = { [TAG]: 'u' };

// JSON.stringify calls it after toJSON: a Date arrives as its string, so it is read from the holder.
function replacer(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  if (raw instanceof Date) {
    const ms = raw.getTime();
    return { [TAG]: 'd', v: Number.isNaN(ms) ? null : ms };
  }
  if (typeof value === 'bigint') return { [TAG]: 'n', v: value.toString() };
  if (value === undefined && key === '' && isRoot(this)) return UNDEFINED;
  if (isPlainObject(value) && Object.keys(value).some((k) => ESCAPED.test(k))) {
    // fromEntries defines own properties, so a key `__proto__` stays a key (assignment would set
    // the prototype and drop it).
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [ESCAPED.test(k) ? `$${k}` : k, v]));
  }
  return value;
}

// JSON.stringify's wrapper of the root value is `{ '': value }`, a plain object of one key.
function isRoot(holder: unknown): boolean {
  return isPlainObject(holder) && Object.keys(holder).length === 1 && Object.hasOwn(holder, '');
}

function reviver(_key: string, value: unknown): unknown {
  if (!isPlainObject(value)) return value;
  if (Object.hasOwn(value, TAG)) {
    const tag = value[TAG];
    if (tag === 'n' && typeof value.v === 'string') return BigInt(value.v);
    if (tag === 'd') return new Date(typeof value.v === 'number' ? value.v : Number.NaN);
    if (tag === 'u') return undefined;
    throw new InvalidArgumentError('value', 'a value written by jsonSerializer', value);
  }
  if (!Object.keys(value).some((k) => ESCAPED.test(k))) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [ESCAPED.test(k) ? k.slice(1) : k, v]));
}

interface Visiting {
  readonly raw: unknown;
  readonly out: unknown;
  readonly path: string;
}

/**
 * Where `value` refers back to one of its own ancestors, as JSON.stringify walks it (toJSON and
 * the replacer applied): the path of that reference and of the ancestor, or `undefined` when the
 * walk ends without one. The replacer sees each holder, so the stack of objects being written is
 * kept from it: a holder's arrival means everything deeper than it was finished.
 */
function findCycle(value: unknown): { at: string; to: string; value: unknown } | undefined {
  const stack: Visiting[] = [];
  let pending: Visiting | undefined;
  let found: { at: string; to: string; value: unknown } | undefined;
  function track(this: unknown, key: string, v: unknown): unknown {
    if (pending !== undefined && pending.out === this) stack.push(pending);
    pending = undefined;
    while (stack.length > 0 && stack[stack.length - 1]?.out !== this) stack.pop();
    // No holder on the stack: this is JSON's wrapper of the root, `{ '': value }`.
    const holderPath = stack[stack.length - 1]?.path;
    const path =
      holderPath === undefined
        ? 'value'
        : Array.isArray(this)
          ? `${holderPath}[${key}]`
          : `${holderPath}.${key}`;
    const raw = (this as Record<string, unknown>)[key];
    const out = replacer.call(this, key, v);
    if (typeof out === 'object' && out !== null) {
      const ancestor = stack.find((s) => s.out === out || s.raw === raw || s.raw === out);
      if (ancestor !== undefined) {
        found = { at: path, to: ancestor.path, value: raw };
        throw found;
      }
      pending = { raw, out, path };
    }
    return out;
  }
  try {
    JSON.stringify(value, track);
  } catch {
    // `found` when the walk met the cycle; anything else is not a cycle
  }
  return found;
}
