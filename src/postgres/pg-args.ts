import { createHash } from 'node:crypto';
import { InvalidArgumentError, StoreError } from '../core/errors.js';
import { isWellFormed } from '../core/validate.js';

/**
 * A prepared statement's name for operation `op` of the store in `schema` (the quoted schema of
 * a PgContext): `pg` prepares a named statement once per connection and reuses it. The schema
 * goes in as a digest, not as itself: PostgreSQL keeps at most 63 bytes of a statement name
 * (NAMEDATALEN - 1) and silently drops the rest, so `onceflow:"<a 63-byte schema>":version-get`
 * and `...:version-upsert` would meet on one connection ("prepared statement already exists").
 * 16 hex digits (64 bits) keep two schemas used on one connection apart; the whole name stays
 * under 63 bytes for every `op` below 30 characters.
 */
export function statementName(schema: string, op: string): string {
  const digest = createHash('sha256').update(schema).digest('hex').slice(0, 16);
  return `onceflow:${op}:${digest}`;
}

/**
 * A string argument that PostgreSQL `text` keeps exactly: well-formed (a lone surrogate cannot
 * be sent as UTF-8; it would come back as U+FFFD) and without U+0000 (`text` cannot hold it).
 * Checked before any SQL, so a refused call changes nothing.
 */
export function pgText(path: string, value: unknown): string {
  if (typeof value !== 'string' || !isWellFormed(value)) {
    throw new InvalidArgumentError(path, 'a well-formed string (no lone surrogate)', value);
  }
  if (value.includes('\u0000')) {
    throw new InvalidArgumentError(
      path,
      'a string without U+0000 (PostgreSQL text cannot hold U+0000)',
      value,
    );
  }
  return value;
}

/**
 * A string argument kept byte for byte in a `bytea` column (values, checkpoint data: U+0000
 * included): its UTF-8 bytes. Well-formed, or its lone surrogates would come back as U+FFFD.
 */
export function pgBytes(path: string, value: unknown): Buffer {
  if (typeof value !== 'string' || !isWellFormed(value)) {
    throw new InvalidArgumentError(path, 'a well-formed string (no lone surrogate)', value);
  }
  return Buffer.from(value, 'utf8');
}

/**
 * A `bytea` column's value as the string it was made from (see {@link pgBytes}). Anything but a
 * Buffer means the pool's type parsers were changed under the store: its failure, typed as such.
 */
export function fromBytes(operation: string, value: unknown): string {
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  throw new StoreError(operation, new Error(`expected bytea as a Buffer, got ${typeof value}`), {
    outcome: 'unknown',
    retriable: false,
  });
}

/** A safe integer argument (it goes into a bigint column and comes back exactly). */
export function safeInt(path: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(path, 'a safe integer', value);
  }
  return value;
}

/**
 * A bigint column as a number: `pg` answers int8 as a decimal string, and every one the store
 * writes is a safe integer, so the conversion is exact. Anything else is the store's failure.
 */
export function intColumn(operation: string, value: unknown): number {
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw unexpectedReply(operation, value);
  return n;
}

/** A reply no function of the schema gives: the schema is not this onceflow's (or was altered). */
export function unexpectedReply(operation: string, got: unknown): StoreError {
  return new StoreError(operation, new Error(`unexpected reply ${JSON.stringify(got)}`), {
    outcome: 'unknown',
    retriable: false,
  });
}
