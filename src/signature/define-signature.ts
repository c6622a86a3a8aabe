import { createHash } from 'node:crypto';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';

const SIGNATURE_OPTIONS = keysOf<SignatureOptions>({ hash: true });

/** The field types a signature can hold. Money is `int` in minor units, never a float. */
export type FieldType = 'string' | 'int' | 'decimal' | 'bool';

/** An ordered list of `[name, type]` pairs; the order is part of the encoding. */
export type SignatureSchema = ReadonlyArray<readonly [name: string, type: FieldType]>;

/** A function from a payload to its signature string. */
export type SignatureFn = ((payload: Record<string, unknown>) => string) & {
  /** The schema the function was defined with. */
  readonly schema: SignatureSchema;
  /** The encoding version prefix (`v1` or `v1h`). */
  readonly version: string;
};

/** Options of {@link defineSignature}. */
export interface SignatureOptions {
  /**
   * `true` gives a fixed-length digest (`v1h:` + 43 base64url characters of SHA-256 over the
   * readable form) instead of the readable form. Use it when payload strings are long.
   */
  hash?: boolean;
}

const TYPES: ReadonlySet<string> = new Set(['string', 'int', 'decimal', 'bool']);
// Field names appear unescaped in the readable form, so they may not contain `|`, `=` or `%`.
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const INT = /^-?\d+$/;
const DECIMAL = /^-?\d+(?:\.\d+)?$/;
// With the `u` flag a valid surrogate pair reads as one astral code point, so only lone halves match.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Defines a versioned, injective signature over a payload's own fields, so that every party
 * computes the same dedup key independently (no counter is synchronised between nodes).
 *
 * Readable form (`v1`): `v1|room=lobby-7|round=42|net=-300|final=true`. Each field is written
 * as `name=value` in schema order. In `string` values `%` becomes `%25` and `|` becomes `%7C`,
 * so no value can imitate a separator: `("a|b","c")` and `("a","b|c")` never collide. `int` is
 * canonical decimal (`007` and `7n` give `7`; `-0` gives `0`), `decimal` has no exponent, no
 * trailing zeros and no `-0`, `bool` is `true` or `false`. The encoding does not depend on the
 * machine, the locale or the payload's key order.
 *
 * Fields of the payload that are not in the schema are ignored. A missing field or a value of
 * the wrong type throws an `ERR_INVALID_ARGUMENT` that names the field; so does a string holding
 * a lone surrogate, which has no UTF-8 form and would otherwise collide with U+FFFD.
 *
 * @example
 * ```ts
 * const settlement = defineSignature([
 *   ['room', 'string'], ['round', 'int'], ['net', 'int'], ['final', 'bool'],
 * ]);
 * settlement({ room: 'lobby-7', round: 42, net: -300, final: true });
 * // 'v1|room=lobby-7|round=42|net=-300|final=true'
 * ```
 */
export function defineSignature(schema: SignatureSchema, options: SignatureOptions = {}): SignatureFn {
  if (!Array.isArray(schema) || schema.length === 0) {
    throw new InvalidOptionError('schema', 'a non-empty array of [name, type] pairs', schema);
  }
  const seen = new Set<string>();
  const fields = schema.map((pair, i) => {
    if (!Array.isArray(pair) || pair.length !== 2) {
      throw new InvalidOptionError(`schema[${i}]`, 'a [name, type] pair', pair);
    }
    const [name, type] = pair as unknown as readonly [unknown, unknown];
    if (typeof name !== 'string' || !FIELD_NAME.test(name)) {
      throw new InvalidOptionError(
        `schema[${i}][0]`,
        'a field name of letters, digits, `_`, `.` or `-`, starting with a letter or `_`',
        name,
      );
    }
    if (seen.has(name)) throw new InvalidOptionError(`schema[${i}][0]`, 'a name not used twice', name);
    seen.add(name);
    if (typeof type !== 'string' || !TYPES.has(type)) {
      throw new InvalidOptionError(`schema[${i}][1]`, "one of 'string', 'int', 'decimal', 'bool'", type);
    }
    return { name, type: type as FieldType, prefix: `|${name}=` };
  });
  if (!isPlainObject(options))
    throw new InvalidOptionError('options', 'an object like { hash: true }', options);
  knownKeys('', options, SIGNATURE_OPTIONS);
  const hash = options.hash ?? false;
  if (typeof hash !== 'boolean') throw new InvalidOptionError('hash', 'a boolean', hash);

  const readable = (payload: Record<string, unknown>): string => {
    if (typeof payload !== 'object' || payload === null) {
      throw new InvalidArgumentError('payload', 'an object', payload);
    }
    let out = 'v1';
    for (const field of fields) {
      // Own fields only: a missing `constructor` must read as missing, not as Object's property.
      const value = Object.hasOwn(payload, field.name) ? payload[field.name] : undefined;
      out += field.prefix + encodeField(field.name, field.type, value);
    }
    return out;
  };
  const fn = hash
    ? (payload: Record<string, unknown>) =>
        `v1h:${createHash('sha256').update(readable(payload)).digest('base64url')}`
    : readable;
  return Object.assign(fn, {
    schema: Object.freeze(fields.map((f) => Object.freeze([f.name, f.type] as const))),
    version: hash ? 'v1h' : 'v1',
  });
}

function encodeField(name: string, type: FieldType, value: unknown): string {
  const path = `payload.${name}`;
  switch (type) {
    case 'string':
      if (typeof value !== 'string') throw new InvalidArgumentError(path, 'a string', value);
      // A lone surrogate has no UTF-8 form: hashing (and any store that writes UTF-8) turns every one
      // of them into U+FFFD, so '\uD800' and '\uFFFD' would share a signature. Refuse, do not guess.
      if (LONE_SURROGATE.test(value)) {
        throw new InvalidArgumentError(path, 'a well-formed Unicode string (no lone surrogate)', value);
      }
      return value.replaceAll('%', '%25').replaceAll('|', '%7C');
    case 'int':
      return canonicalInt(path, value);
    case 'decimal':
      return canonicalDecimal(path, value);
    case 'bool':
      if (typeof value !== 'boolean') throw new InvalidArgumentError(path, 'a boolean', value);
      return value ? 'true' : 'false';
  }
}

function canonicalInt(path: string, value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value); // String(-0) is '0'
  if (typeof value === 'string' && INT.test(value)) return BigInt(value).toString();
  throw new InvalidArgumentError(path, 'an int (a safe integer, a bigint or a string of digits)', value);
}

function canonicalDecimal(path: string, value: unknown): string {
  let text: string;
  if (typeof value === 'bigint') text = value.toString();
  else if (typeof value === 'number' && Number.isFinite(value)) text = expandExponent(String(value));
  else if (typeof value === 'string' && DECIMAL.test(value)) text = value;
  else {
    throw new InvalidArgumentError(
      path,
      "a decimal (a finite number, a bigint or a string like '-12.50' without exponent)",
      value,
    );
  }
  const negative = text.startsWith('-');
  const [intPart = '0', fracPart = ''] = (negative ? text.slice(1) : text).split('.');
  const int = intPart.replace(/^0+(?=\d)/, '');
  const frac = fracPart.replace(/0+$/, '');
  const body = frac ? `${int}.${frac}` : int;
  return negative && body !== '0' ? `-${body}` : body;
}

/** `1e-7` → `0.0000001`, `1.5e+21` → `1500000000000000000000` (what `String(number)` may give). */
function expandExponent(text: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!match) return text;
  const [, sign = '', whole = '', frac = '', exp = '0'] = match;
  const digits = whole + frac;
  const point = whole.length + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return sign + digits + '0'.repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
