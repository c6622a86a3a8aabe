import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../core/errors.js';
import { LIMITS, utf8Bytes } from '../core/limits.js';
import { isPlainObject } from '../core/validate.js';

// 1 000 levels, as for a ledger entry's meta (src/core/json-copy.ts): far deeper than a request
// body, and far from the stack's limit for this recursion (~10 000 frames).
const MAX_DEPTH = 1000;

/**
 * The hash an idempotency record keeps of a call's payload: sha256 of its canonical text, in
 * base64url (43 characters). Two payloads have the same hash iff they are the same value: object
 * keys in sorted order (key order never matters), an `undefined` property as if absent (as in
 * JSON), a `bigint`, a `Date` and `undefined` (the whole payload, or an array element) each
 * encoded apart from any number, string or `null`. What has no such form (a function, a symbol,
 * `NaN` or an infinity, a Map, a class instance, a cycle) is refused with `ERR_INVALID_ARGUMENT`
 * naming its place, as is a payload over {@link LIMITS.payloadBytes} bytes of canonical text.
 */
export function payloadHash(payload: unknown): string {
  return createHash('sha256').update(canonicalPayload(payload), 'utf8').digest('base64url');
}

/**
 * The canonical text {@link payloadHash} hashes: JSON with sorted keys, where `n<digits>` is a
 * bigint, `d<ms>` a Date and `u` undefined (tokens no JSON value starts with).
 */
export function canonicalPayload(payload: unknown): string {
  const out: string[] = [];
  const budget = { units: 0 };
  encode(payload, 'payload', out, new Set(), 0, budget);
  const text = out.join('');
  // Each UTF-16 unit is 1 to 3 bytes: only a text that might be over is measured.
  if (text.length * 3 > LIMITS.payloadBytes && utf8Bytes(text) > LIMITS.payloadBytes) tooLarge(text.length);
  return text;
}

function tooLarge(size: number): never {
  throw new InvalidArgumentError(
    'payload',
    `at most ${LIMITS.payloadBytes} bytes of canonical JSON (LIMITS.payloadBytes; this one has at least ${size}): hash a digest of a larger payload`,
    '[payload]',
  );
}

function push(text: string, out: string[], budget: { units: number }): void {
  // Stops early on a huge payload: more units than bytes allowed can never fit.
  budget.units += text.length;
  if (budget.units > LIMITS.payloadBytes) tooLarge(budget.units);
  out.push(text);
}

function encode(
  value: unknown,
  path: string,
  out: string[],
  ancestors: Set<object>,
  depth: number,
  budget: { units: number },
): void {
  switch (typeof value) {
    case 'string':
      push(JSON.stringify(value), out, budget);
      return;
    case 'boolean':
      push(value ? 'true' : 'false', out, budget);
      return;
    case 'number':
      if (!Number.isFinite(value)) refuse(path, value);
      push(JSON.stringify(value), out, budget); // -0 as 0, as JSON writes it
      return;
    case 'bigint':
      push(`n${value}`, out, budget);
      return;
    case 'undefined':
      push('u', out, budget);
      return;
    case 'object':
      break;
    default:
      refuse(path, value);
  }
  if (value === null) {
    push('null', out, budget);
    return;
  }
  if (value instanceof Date) {
    const ms = value.getTime();
    if (Number.isNaN(ms)) refuse(path, value);
    push(`d${ms}`, out, budget);
    return;
  }
  if (ancestors.has(value)) refuse(path, '[a cycle]');
  if (depth >= MAX_DEPTH) {
    throw new InvalidArgumentError('payload', `nested at most ${MAX_DEPTH} levels deep`, '[payload]');
  }
  ancestors.add(value);
  if (Array.isArray(value)) {
    push('[', out, budget);
    for (let i = 0; i < value.length; i++) {
      if (i > 0) push(',', out, budget);
      encode(value[i], `${path}[${i}]`, out, ancestors, depth + 1, budget);
    }
    push(']', out, budget);
  } else if (isPlainObject(value)) {
    push('{', out, budget);
    let first = true;
    for (const key of Object.keys(value).sort()) {
      const v = value[key];
      if (v === undefined) continue;
      if (!first) push(',', out, budget);
      first = false;
      push(`${JSON.stringify(key)}:`, out, budget);
      encode(v, `${path}.${key}`, out, ancestors, depth + 1, budget);
    }
    push('}', out, budget);
  } else {
    refuse(path, value);
  }
  ancestors.delete(value);
}

function refuse(path: string, value: unknown): never {
  throw new InvalidArgumentError(
    path,
    'JSON-like data (plain objects, arrays, strings, finite numbers, booleans, null, bigint, Date, undefined)',
    value,
  );
}
