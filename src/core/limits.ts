import { InvalidArgumentError, InvalidOptionError } from './errors.js';

/**
 * The size bounds of what onceflow stores, counted in **UTF-8 bytes** (what Redis and PostgreSQL
 * store, send and compare; a JavaScript string's `length` counts UTF-16 units, and one unit can
 * take up to 3 bytes). An input over a bound is refused with `ERR_INVALID_ARGUMENT` (an option:
 * `ERR_INVALID_OPTION`) that names the field and the bound, before any store call, so nothing
 * changes. Each bound is far above what real use sends (the derivation is given per field) and
 * keeps the worst single call cheap for every other client of a shared store.
 *
 * @example
 * ```ts
 * LIMITS.signatureBytes; // 1024
 * const ledger = createLedger({ capacity: 4 });
 * const err = await ledger
 *   .apply({ owner: 'p1', signature: 'x'.repeat(LIMITS.signatureBytes + 1), deltas: { coins: 1 } })
 *   .catch((e) => e);
 * err.code; // 'ERR_INVALID_ARGUMENT'
 * err.path; // 'signature'
 * await ledger.balances('p1'); // {}
 * ```
 */
export const LIMITS = Object.freeze({
  /**
   * A ledger entry's signature. A settlement signature from `defineSignature`
   * (`v1|room=lobby-7|round=42|net=-300|final=true`) is ~45 bytes, a hashed one
   * (`{ hash: true }`) exactly 47: 1024 leaves room for a readable signature over a dozen ids
   * (a UUID is 36 bytes); longer payloads should be hashed. A window holds `capacity` of them,
   * and an apply on Redis reads, searches and rewrites its owner's window once (linear in its
   * bytes): a full window of 1 KB signatures sharing all but their last bytes costs ~0.4 ms of
   * Redis time per apply at capacity 64, ~1.5 ms at 256 (scripts/signature-cost.mjs).
   */
  signatureBytes: 1024,
  /**
   * A ledger owner (an account, a player). Ids are ~10-40 bytes (a UUID is 36); 256 leaves room
   * for a composite `tenant/region/account` id. The owner is in both of its Redis keys (escaped:
   * up to 3 bytes per byte) and in the ledger's owner registry, so it bounds a key under ~800 bytes.
   */
  ownerBytes: 256,
  /**
   * A ledger scope (a room, a merchant): the same kind of id as an owner, 256 for the same reason.
   * It prefixes each scope-total field of the owner's Redis hash and names the scope's registry key.
   */
  scopeBytes: 256,
  /**
   * A delta's field name (`coins`, `bonus`, `fee:EUR`): ~5-20 bytes in use; 128 leaves room for
   * namespaced names. With at most {@link LIMITS.deltas} fields, an entry's names stay under
   * 128 KB, each written into the balances, a scope total and the journal entry.
   */
  fieldBytes: 128,
  /**
   * An entry's `meta`, as JSON text. A settlement's (`{"round":42,"room":"lobby-7"}`) is ~30 bytes;
   * 4096 holds an audit note or a small copy of the event. Kept with every journal entry: at the
   * memory store's default retention (100 000 entries) meta takes ~400 MB at worst; on Redis it is
   * one XADD argument per apply.
   */
  metaBytes: 4096,
  /**
   * Fields per ledger entry. An entry books a handful (coins, bonus, fees); the Redis script
   * passes them to XADD and HSET as arguments, and Lua's unpack() stops near 8 000 values (2 per
   * field): a script that failed half-way would not be rolled back.
   */
  deltas: 1000,
  /**
   * A name that becomes a key space: a ledger's, a limiter's, a version gate's, a checkpoint's, a
   * snowflake clock's, a tenant id. Names are ~5-30 bytes (`settlements`, `api-per-user`); 256
   * leaves room for a generated one (`<service>:<region>:<uuid>`) and bounds the keys built from it.
   */
  nameBytes: 256,
  /**
   * A rate limiter's subject (an IP, a user id, an API key) and a version gate's key (a row id).
   * Most are under 64 bytes; 512 admits a whole bearer token as the subject. Each becomes a Redis
   * key (one per limit), read and written on every take.
   */
  keyBytes: 512,
  /**
   * A version gate's value, as JSON text: the latest state of one row (a CDC record is usually
   * under 1 KB). 64 KB leaves room for wide rows; on Redis it is one SET argument per upsert,
   * and ~0.1 ms to copy at worst.
   */
  valueBytes: 65_536,
  /**
   * An idempotent call's payload, as the canonical JSON its hash is taken of. The payload is
   * hashed, never stored (the record keeps its 43-byte sha256), so the bound only keeps one call's
   * hashing cheap: 1 MiB is a large HTTP request body (most APIs refuse bodies over 1 MB) and
   * hashes in ~2-3 ms (sha256 at ~400 MB/s plus the encoding); hash a digest of anything larger.
   */
  payloadBytes: 1_048_576,
} as const);

/** The name of a bound in {@link LIMITS}. */
export type LimitName = keyof typeof LIMITS;

/**
 * The UTF-8 byte length of a well-formed string, without encoding it when its UTF-16 length
 * decides: each unit is 1 to 3 bytes (a surrogate pair, 2 units, is 4 bytes).
 */
export function utf8Bytes(value: string): number {
  return Buffer.byteLength(value, 'utf8');
}

/** Whether `value` fits in `max` UTF-8 bytes: only a string that might not is measured. */
function fits(value: string, max: number): boolean {
  const units = value.length;
  if (units * 3 <= max) return true;
  if (units > max) return false;
  return utf8Bytes(value) <= max;
}

function expected(limit: LimitName, value: string, hint: string): string {
  return `at most ${LIMITS[limit]} bytes of UTF-8 (LIMITS.${limit}; this one has ${utf8Bytes(value)})${hint}`;
}

/**
 * Asserts that a string argument fits its bound in {@link LIMITS}: an `ERR_INVALID_ARGUMENT`
 * naming `path`, the bound and the size otherwise. `hint` says what to do instead.
 */
export function withinLimit(path: string, value: string, limit: LimitName, hint = ''): string {
  if (!fits(value, LIMITS[limit])) throw new InvalidArgumentError(path, expected(limit, value, hint), value);
  return value;
}

/** {@link withinLimit} for an option: an `ERR_INVALID_OPTION` naming it. */
export function optionWithinLimit(option: string, value: string, limit: LimitName): string {
  if (!fits(value, LIMITS[limit])) throw new InvalidOptionError(option, expected(limit, value, ''), value);
  return value;
}
