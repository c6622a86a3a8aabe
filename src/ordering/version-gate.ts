import { InvalidArgumentError, InvalidOptionError, StoreError } from '../core/errors.js';
import { jsonCopy } from '../core/json-copy.js';
import { LIMITS, optionWithinLimit, utf8Bytes, withinLimit } from '../core/limits.js';
import { type Emit, type Observer, observing } from '../core/observer.js';
import {
  isPlainObject,
  keysOf,
  knownKeys,
  nonEmptyString,
  nonEmptyStringArg,
  type Order,
} from '../core/validate.js';
import { type OrderingStoreOps, requireOps, type VersionUpsertReply } from '../store/ordering.js';
import type { JsonValue, Store } from '../store/store.js';

const GATE_OPTIONS = keysOf<VersionGateOptions>({ store: true, name: true, observer: true });

/** Options of {@link VersionGate}. */
export interface VersionGateOptions {
  /** Where the versions live: `memoryStore()` or the Redis store (one script per upsert). */
  store: Store;
  /** The gate's name: gates of different names never see each other's keys. Default `'default'`. */
  name?: string;
  /**
   * Told every upsert's outcome (`version-gate.upsert`: applied, duplicate, stale, or failed on a
   * store error): see docs/observability.md.
   */
  observer?: Observer;
}

/** What {@link VersionGate.upsert} decided. */
export interface VersionGateResult {
  /** `applied`: newer, stored. `duplicate`: the same version is stored. `stale`: an older one came. */
  readonly outcome: VersionUpsertReply['outcome'];
  /** The stored version after the call. */
  readonly version: bigint;
}

/**
 * The consumer side of ordering (DESIGN §3.4): an upsert is applied only when its version is
 * newer than the stored one, in one atomic step of the store (one synchronous block in memory,
 * one Lua script in Redis), so two consumers racing on one key can never let an older version
 * overwrite a newer one. Out-of-order and repeated change events then converge on the newest row.
 *
 * Versions are integers (a row version, an LSN, a snowflake id): `number` or `bigint`, compared
 * exactly at any size.
 *
 * @example
 * ```ts
 * const gate = new VersionGate({ store: memoryStore(), name: 'users' });
 * (await gate.upsert('u1', 2, { name: 'Ada' })).outcome; // 'applied'
 * (await gate.upsert('u1', 1, { name: 'old' })).outcome; // 'stale'
 * (await gate.upsert('u1', 2, { name: 'Ada' })).outcome; // 'duplicate'
 * await gate.get('u1'); // { version: 2n, value: { name: 'Ada' } }
 * ```
 */
export class VersionGate {
  readonly #name: string;
  readonly #ops: Required<Pick<OrderingStoreOps, 'versionUpsert' | 'versionGet'>>;
  readonly #emit: Emit | undefined;

  constructor(options: VersionGateOptions) {
    if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
    knownKeys('', options, GATE_OPTIONS);
    this.#ops = requireOps(options.store, 'store', 'versionUpsert', 'versionGet');
    // `undefined` is the default; anything else (null included) must be a name, as for a ledger.
    this.#name = optionWithinLimit(
      'name',
      nonEmptyString('name', options.name === undefined ? 'default' : options.name),
      'nameBytes',
    );
    this.#emit = observing(options.observer, 'observer');
  }

  /** The gate's name (its key space on the store); fixed when made. */
  get name(): string {
    return this.#name;
  }

  /** Stores `value` under `key` iff `version` is newer than the stored one. */
  async upsert(key: string, version: Order, value: JsonValue): Promise<VersionGateResult> {
    withinLimit('key', nonEmptyStringArg('key', key), 'keyBytes');
    const v = versionString(version);
    // Strict JSON, as a ledger's meta: what JSON.stringify would drop or change silently (NaN to
    // null, an undefined property dropped, a Date to a string) is refused, naming the place.
    const text = JSON.stringify(jsonCopy(value, 'value'));
    if (text.length * 3 > LIMITS.valueBytes && utf8Bytes(text) > LIMITS.valueBytes) {
      throw new InvalidArgumentError(
        'value',
        `at most ${LIMITS.valueBytes} bytes of UTF-8 as JSON (LIMITS.valueBytes; this one has ${utf8Bytes(text)})`,
        value,
      );
    }
    const emit = this.#emit;
    if (emit === undefined) {
      const reply = await this.#ops.versionUpsert(this.#name, key, v, text);
      return { outcome: reply.outcome, version: storedVersion('versionUpsert', reply.version) };
    }
    let result: VersionGateResult;
    try {
      const reply = await this.#ops.versionUpsert(this.#name, key, v, text);
      result = { outcome: reply.outcome, version: storedVersion('versionUpsert', reply.version) };
    } catch (err) {
      emit({ part: 'version-gate', type: 'upsert', gate: this.#name, outcome: 'failed' });
      throw err;
    }
    emit({ part: 'version-gate', type: 'upsert', gate: this.#name, outcome: result.outcome });
    return result;
  }

  /** The stored version and value under `key`, or `undefined`. */
  async get(key: string): Promise<{ version: bigint; value: JsonValue } | undefined> {
    withinLimit('key', nonEmptyStringArg('key', key), 'keyBytes');
    const stored = await this.#ops.versionGet(this.#name, key);
    if (stored === undefined) return undefined;
    let value: JsonValue;
    try {
      value = JSON.parse(stored.value) as JsonValue;
    } catch (err) {
      throw new StoreError('versionGet', new Error(`the value under '${key}' is not JSON`, { cause: err }));
    }
    return { version: storedVersion('versionGet', stored.version), value };
  }
}

/** A version as the store answered it; corrupt data is the store's failure, typed as such. */
function storedVersion(operation: string, text: string): bigint {
  // The canonical decimal the gate writes (version-gate.lua compares that form): BigInt alone
  // would also take '', ' 7 ' and '0x10'.
  if (typeof text !== 'string' || !/^(0|-?[1-9]\d*)$/.test(text)) {
    throw new StoreError(operation, new Error(`stored version ${JSON.stringify(text)} is not an integer`));
  }
  return BigInt(text);
}

function versionString(version: unknown): string {
  if (typeof version === 'bigint') return version.toString();
  if (typeof version === 'number' && Number.isSafeInteger(version))
    return String(version === 0 ? 0 : version);
  throw new InvalidArgumentError('version', 'a safe integer or a bigint', version);
}
