import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { optionWithinLimit } from '../core/limits.js';
import { type Emit, type Observer, observing } from '../core/observer.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyString } from '../core/validate.js';
import type { IdempotencyStoreOps } from '../store/idempotency.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { type SeenFilter, seenFilterOption } from '../windows/seen-filter.js';
import { jsonSerializer, type Serializer } from './serializer.js';

/** Options of {@link createIdempotency}. */
export interface IdempotencyOptions {
  /** Where the records live. Default: a new `memoryStore()` (this process only). */
  store?: Store;
  /** The key space: idempotencies of different names never see each other's keys. Default `'default'`. */
  name?: string;
  /**
   * How long a caller holds a key while its `fn` runs, renewed every third of it: the time a
   * caller that died keeps the key from the others (then one takes over and runs `fn` again).
   * Longer than a store round trip by far; a few times `fn`'s usual run. Default `'30s'`.
   */
  lease?: Duration;
  /** How long a completed call's result is replayed; after it, the key runs again. Default `'24h'`. */
  ttl?: Duration;
  /**
   * Whether a call's `payload` is hashed into the record, so the same key with another payload
   * answers `mismatch`. `false`: payloads are ignored. Default `true`.
   */
  hashPayload?: boolean;
  /** The largest result kept, in UTF-8 bytes serialized; a larger one is refused. Default {@link DEFAULT_MAX_RESULT_BYTES}. */
  maxResultBytes?: number;
  /** How results are kept. Default {@link jsonSerializer} (JSON where bigint and Date round-trip). */
  serializer?: Serializer;
  /**
   * Told every run's answer (`idempotency.run`: executed, with `takeover`, replayed, in-progress,
   * mismatch, failed) and every lost lease (`idempotency.lease-lost`): see docs/observability.md.
   */
  observer?: Observer;
  /**
   * A Bloom pre-check in front of `seen(key)`: a key it never saw here answers `false` without the
   * store read; `run` adds every key it is given. Advisory only: `run` still decides every call
   * (docs/pre-checks.md). None by default.
   */
  preCheck?: SeenFilter;
}

/** Every key of {@link IdempotencyOptions}. */
export const IDEMPOTENCY_OPTIONS = keysOf<IdempotencyOptions>({
  store: true,
  name: true,
  lease: true,
  ttl: true,
  hashPayload: true,
  maxResultBytes: true,
  serializer: true,
  observer: true,
  preCheck: true,
});

/**
 * The default `maxResultBytes`: 64 KiB, as `LIMITS.valueBytes`. It holds an HTTP response body
 * of a typical API (a Stripe charge is ~3 KB); on Redis the result is one script argument (~0.1 ms
 * to copy at worst), and the records of a ttl stay in memory: at the default 24 h, every 1 000
 * keys with full-size results hold 64 MB. Raise it for large results, or keep a reference (an id)
 * instead of the result itself.
 *
 * @example
 * ```ts
 * DEFAULT_MAX_RESULT_BYTES; // 65536
 * const idem = createIdempotency({ maxResultBytes: 4 * DEFAULT_MAX_RESULT_BYTES });
 * (await idem.run({ key: 'k1' }, () => 'x'.repeat(100_000))).outcome; // 'executed'
 * ```
 */
export const DEFAULT_MAX_RESULT_BYTES = 65_536;

// Redis refuses a bulk argument over its default proto-max-bulk-len (512 MiB): a larger result
// could never be recorded there.
const MAX_RESULT_BYTES = 536_870_912;

// 100 years: the store's time plus the ttl stays far below 2^53, exact in every store (a Lua
// number is a double).
const MAX_TTL_MS = 3_155_760_000_000;

/** The idempotency operations a store must have (`idempotencyGet`: only for `seen`). */
export type IdempotencyOps = Required<Omit<IdempotencyStoreOps, 'idempotencyGet'>> &
  Pick<IdempotencyStoreOps, 'idempotencyGet'>;

/** {@link IdempotencyOptions}, validated. */
export interface ResolvedIdempotencyOptions {
  readonly ops: IdempotencyOps;
  readonly name: string;
  readonly leaseMs: number;
  readonly ttlMs: number;
  readonly hashPayload: boolean;
  readonly maxResultBytes: number;
  readonly serializer: Serializer;
  readonly emit: Emit | undefined;
  readonly preCheck: SeenFilter | undefined;
}

const OPS = ['idempotencyBegin', 'idempotencyRenew', 'idempotencyComplete', 'idempotencyRelease'] as const;

/** Validates every option once, with the usual messages (`InvalidOptionError` naming it). */
export function resolveOptions(options: IdempotencyOptions): ResolvedIdempotencyOptions {
  if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, IDEMPOTENCY_OPTIONS);
  const store = options.store ?? memoryStore();
  for (const op of OPS) {
    if (typeof (store as Partial<Store> | undefined)?.[op] !== 'function') {
      throw new InvalidOptionError(
        'store',
        `a store with ${OPS.join(', ')} (memoryStore, the Redis or the Postgres store)`,
        store,
      );
    }
  }
  const bound = store as Store & IdempotencyOps;
  const ops: IdempotencyOps = {
    idempotencyBegin: bound.idempotencyBegin.bind(bound),
    idempotencyRenew: bound.idempotencyRenew.bind(bound),
    idempotencyComplete: bound.idempotencyComplete.bind(bound),
    idempotencyRelease: bound.idempotencyRelease.bind(bound),
  };
  if (typeof bound.idempotencyGet === 'function') ops.idempotencyGet = bound.idempotencyGet.bind(bound);
  // `undefined` is the default; anything else (null included) must be a name, as for a ledger.
  const name = optionWithinLimit(
    'name',
    nonEmptyString('name', options.name === undefined ? 'default' : options.name),
    'nameBytes',
  );
  const leaseMs = timerDuration('lease', options.lease ?? '30s');
  if (leaseMs <= 0) throw new InvalidOptionError('lease', 'a positive duration', options.lease);
  const ttlMs = parseDuration(options.ttl ?? '24h', 'ttl');
  if (ttlMs <= 0 || ttlMs > MAX_TTL_MS) {
    throw new InvalidOptionError(
      'ttl',
      `a positive duration of at most ${MAX_TTL_MS} ms (100 years)`,
      options.ttl,
    );
  }
  const hashPayload = options.hashPayload ?? true;
  if (typeof hashPayload !== 'boolean') throw new InvalidOptionError('hashPayload', 'a boolean', hashPayload);
  const maxResultBytes = options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
  if (!Number.isSafeInteger(maxResultBytes) || maxResultBytes <= 0 || maxResultBytes > MAX_RESULT_BYTES) {
    throw new InvalidOptionError(
      'maxResultBytes',
      `a positive safe integer of at most ${MAX_RESULT_BYTES} (512 MiB, Redis's largest argument)`,
      maxResultBytes,
    );
  }
  const serializer = options.serializer ?? jsonSerializer;
  if (
    typeof serializer?.serialize !== 'function' ||
    typeof (serializer as Partial<Serializer>).deserialize !== 'function'
  ) {
    throw new InvalidOptionError(
      'serializer',
      'an object with serialize(value) and deserialize(text)',
      serializer,
    );
  }
  const emit = observing(options.observer, 'observer');
  const preCheck = seenFilterOption('preCheck', options.preCheck);
  return { ops, name, leaseMs, ttlMs, hashPayload, maxResultBytes, serializer, emit, preCheck };
}

/**
 * A `wait` (of a call, or of `idempotent()`'s options) in ms: `false` or absent 0, `true` one
 * lease (long enough for the holder to finish, or for its lease to run out and the waiter to take
 * over), a duration that long.
 */
export function waitMs(wait: unknown, leaseMs: number, path: string, kind: 'option' | 'argument'): number {
  if (wait === undefined || wait === false) return 0;
  if (wait === true) return leaseMs;
  try {
    return timerDuration(path, wait as Duration);
  } catch (err) {
    if (kind === 'option') throw err;
    throw new InvalidArgumentError(path, 'a boolean or a duration of at most 2^31 - 1 ms', wait);
  }
}
