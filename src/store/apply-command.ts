import { InvalidArgumentError } from '../core/errors.js';
import { jsonCopy } from '../core/json-copy.js';
import { LIMITS, utf8Bytes, withinLimit } from '../core/limits.js';
import { isPlainObject, nonEmptyStringArg, optionalOrder } from '../core/validate.js';
import type { JsonValue, LedgerApplyCommand } from './store.js';

// Fields per entry (LIMITS.deltas gives the derivation). The ledger and every store refuse more.
export const MAX_DELTAS = LIMITS.deltas;

// Up to this many fields a repeat is found by comparing each field with those before it: at most
// 120 string comparisons, below the cost of allocating and filling a Set (a measurable share of a
// memory apply, where most entries book one field). Above it, a Set keeps the check linear.
const SCAN_MAX_FIELDS = 16;

/** A command's window capacity: a positive safe integer, or a typed error naming `capacity`. */
export function checkCapacity(capacity: unknown): number {
  if (typeof capacity !== 'number' || !Number.isSafeInteger(capacity) || capacity <= 0) {
    throw new InvalidArgumentError('capacity', 'a positive safe integer', capacity);
  }
  return capacity;
}

/**
 * Checks a store command's deltas as a direct caller may have built them (the ledger builds them
 * right): at most MAX_DELTAS `[field, bigint]` pairs, each field once and within LIMITS.fieldBytes. A field twice would be added twice to the
 * balance and, on Redis, once to the scope total (the script reads every total before it writes
 * any): refused, before anything changes, in every store alike.
 */
export function checkDeltaPairs(deltas: LedgerApplyCommand['deltas']): void {
  if (deltas.length > MAX_DELTAS) {
    throw new InvalidArgumentError('deltas', `at most ${MAX_DELTAS} fields`, deltas.length);
  }
  const seen = deltas.length > SCAN_MAX_FIELDS ? new Set<string>() : undefined;
  for (let i = 0; i < deltas.length; i++) {
    const pair = deltas[i];
    if (!Array.isArray(pair) || typeof pair[0] !== 'string' || typeof pair[1] !== 'bigint') {
      throw new InvalidArgumentError('deltas', '[field, bigint] pairs', pair);
    }
    const field = pair[0];
    withinLimit('deltas', field, 'fieldBytes');
    let repeated = false;
    if (seen === undefined) {
      for (let j = 0; j < i && !repeated; j++)
        repeated = (deltas[j] as readonly [string, bigint])[0] === field;
    } else {
      repeated = seen.has(field);
      seen.add(field);
    }
    if (repeated) throw new InvalidArgumentError('deltas', 'each field once', field);
  }
}

/**
 * Checks a whole apply command as a direct caller of `Store.ledgerApply` may have built it (the
 * ledger builds it right). A store that batches calls must refuse a malformed one before it joins
 * a batch: one bad entry would fail the script for every caller in it, after the entries before it
 * had been written (a script is not rolled back). Returns the command's `meta` as JSON text.
 */
export function checkApplyCommand(cmd: LedgerApplyCommand): string | undefined {
  if (!isPlainObject(cmd)) throw new InvalidArgumentError('command', 'an object', cmd);
  nonEmptyStringArg('ledger', cmd.ledger);
  checkCapacity(cmd.capacity);
  if (typeof cmd.horizon !== 'boolean') throw new InvalidArgumentError('horizon', 'a boolean', cmd.horizon);
  withinLimit('owner', nonEmptyStringArg('owner', cmd.owner), 'ownerBytes');
  withinLimit('signature', nonEmptyStringArg('signature', cmd.signature), 'signatureBytes', SIGNATURE_HINT);
  if (!Array.isArray(cmd.deltas))
    throw new InvalidArgumentError('deltas', '[field, bigint] pairs', cmd.deltas);
  checkDeltaPairs(cmd.deltas);
  for (const [field] of cmd.deltas) {
    if (field === '__proto__')
      throw new InvalidArgumentError('deltas', 'field names other than `__proto__`', field);
    nonEmptyStringArg('deltas', field);
  }
  if (cmd.scope !== undefined) withinLimit('scope', nonEmptyStringArg('scope', cmd.scope), 'scopeBytes');
  optionalOrder('order', cmd.order);
  return cmd.meta === undefined ? undefined : metaText(jsonCopy(cmd.meta, 'meta'));
}

/**
 * The size bounds of a command's strings and meta (LIMITS), for a store that takes a command as a
 * direct caller may have built it, without the rest of checkApplyCommand. Fields are bounded in
 * checkDeltaPairs.
 */
export function checkCommandSizes(cmd: LedgerApplyCommand): void {
  if (typeof cmd.owner === 'string') withinLimit('owner', cmd.owner, 'ownerBytes');
  if (typeof cmd.signature === 'string')
    withinLimit('signature', cmd.signature, 'signatureBytes', SIGNATURE_HINT);
  if (typeof cmd.scope === 'string') withinLimit('scope', cmd.scope, 'scopeBytes');
  if (cmd.meta !== undefined) metaText(cmd.meta);
}

/** What a too-long signature's error suggests instead. */
export const SIGNATURE_HINT = ': a longer key can be hashed, defineSignature(schema, { hash: true })';

/** An entry's `meta` (a fresh JSON copy) as the JSON text stores keep, within LIMITS.metaBytes. */
export function metaText(meta: JsonValue): string {
  const text = JSON.stringify(meta);
  if (text.length > LIMITS.metaBytes / 3 && utf8Bytes(text) > LIMITS.metaBytes) {
    throw new InvalidArgumentError(
      'meta',
      `at most ${LIMITS.metaBytes} bytes of UTF-8 as JSON (LIMITS.metaBytes; this one has ${utf8Bytes(text)})`,
      meta,
    );
  }
  return text;
}
