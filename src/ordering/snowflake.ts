import { anchoredClock, type Clock, wholeMs } from '../core/clock.js';
import { type Duration, parseDuration } from '../core/duration.js';
import { ClockRollbackError, InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { optionWithinLimit } from '../core/limits.js';
import { type Emit, type Observer, observing } from '../core/observer.js';
import { timerDelay } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyString, nonNegativeInt } from '../core/validate.js';
import { requireOps } from '../store/ordering.js';
import type { Store } from '../store/store.js';
import { SnowflakeLease } from './snowflake-lease.js';

/** Options of {@link Snowflake}. */
export interface SnowflakeOptions {
  /** This generator's worker id, unique among the generators of one id space: 0..2^workerBits-1. */
  worker: number;
  /** Ms since the Unix epoch (or a Date) where id time starts. Default 2024-01-01T00:00:00Z. */
  epoch?: number | Date;
  /** How far back (ms) the clock may step before `next()` throws instead of waiting. Default 5. */
  rollbackToleranceMs?: number;
  /**
   * Time source. Default: the wall clock read once at start, advanced by the monotonic clock
   * (`performance.now()`), so the wall clock stepping back at run time cannot produce a duplicate.
   * A clock passed here may step back (an NTP step on `Date.now`, a FakeClock in a test): then
   * the rollback tolerance applies.
   */
  clock?: Clock;
  /**
   * Blocks for about `ms` while the clock catches up (a rollback within tolerance, or a spent
   * sequence). Default: `Atomics.wait` for whole milliseconds, then spinning on the clock. A test
   * with a FakeClock passes `(ms) => clock.advance(ms)`.
   */
  wait?: (ms: number) => void;
  /** Bits of the worker id. Default 10 (1024 workers). */
  workerBits?: number;
  /** Bits of the per-millisecond sequence. Default 12 (4096 ids per ms per worker). */
  sequenceBits?: number;
  /**
   * How long the generator must keep working from now: construction fails when the time bits run
   * out sooner. Default `'3650d'` (10 years).
   */
  lifetime?: Duration;
  /**
   * A persisted last timestamp (ms since the Unix epoch) up to which ids may have been issued
   * before a restart; no id is issued at or below it. See {@link Snowflake.start} for a store.
   */
  lastTimestamp?: number;
  /**
   * Told each wait for the clock (`snowflake.wait`: a rollback within tolerance, or a spent
   * sequence) and each rollback beyond it (`snowflake.rollback-refused`, as `next()` throws): see
   * docs/observability.md.
   */
  observer?: Observer;
}

/** The fields of an id. */
export interface DecodedSnowflake {
  readonly id: bigint;
  /** Ms since the Unix epoch. */
  readonly timestamp: number;
  readonly worker: number;
  readonly sequence: number;
}

// 2024-01-01T00:00:00Z: an epoch near the first deployment leaves the 41 time bits ~69 years.
const DEFAULT_EPOCH = Date.UTC(2024, 0, 1);
// 5 ms (DESIGN §3.4): NTP slews a drifting clock by at most 0.5 ms per second and steps it only
// for offsets above 128 ms, so a few ms back are ordinary jitter worth waiting out; a larger step
// is a misconfigured clock, and waiting it out would stall every caller: better to fail loudly.
const DEFAULT_TOLERANCE_MS = 5;
// 10 years: longer than the retention of the data that carries these ids in the systems this is
// for; a layout that runs out sooner must be seen at construction, not in production.
const DEFAULT_LIFETIME = '3650d';
// 63 bits, not 64: the ids stay positive in a signed 64-bit column (PostgreSQL BIGINT, Java long).
const ID_BITS = 63;
// A store lease (see start) of 2 s, renewed at half-time: the store may stall for 1 s (a Redis
// failover elects a replica in about that) before next() refuses; a restart within 2 s of the last
// renewal waits at most 2 s. Longer leases stall quick restarts longer; shorter ones write more.
const DEFAULT_LEASE = '2s';

const SNOWFLAKE_OPTIONS = keysOf<SnowflakeOptions>({
  worker: true,
  epoch: true,
  rollbackToleranceMs: true,
  clock: true,
  wait: true,
  workerBits: true,
  sequenceBits: true,
  lifetime: true,
  lastTimestamp: true,
  observer: true,
});
const START_OPTIONS = [...SNOWFLAKE_OPTIONS, 'store', 'name', 'lease'];

const sequenceTables = new Map<number, bigint[]>();
const sharedWord = new Int32Array(new SharedArrayBuffer(4));
const defaultWait = (ms: number): void => {
  // Sleep whole milliseconds without burning a core; the sub-millisecond rest is spun on the clock.
  if (ms >= 2) Atomics.wait(sharedWord, 0, 0, ms - 1);
};

/**
 * Snowflake ids (DESIGN §3.4): 63-bit `bigint`s of 41 bits of milliseconds since `epoch`, 10 bits
 * of worker, 12 bits of sequence (layout adjustable), increasing per worker.
 *
 * - A clock that steps back by at most `rollbackToleranceMs` is waited out; further back,
 *   `next()` throws `ERR_CLOCK_ROLLBACK` (an id from a past millisecond could repeat one).
 * - 4096 ids in one millisecond: the generator waits for the next millisecond.
 * - Time comes from a monotonic clock anchored at start, so a wall clock stepped back at run time
 *   changes nothing; across a restart, a persisted last timestamp (`lastTimestamp`, or
 *   {@link Snowflake.start} with a store) catches a clock that is now behind.
 * - Construction fails when the layout would run out within `lifetime`.
 *
 * @example
 * ```ts
 * const clock = new FakeClock(Date.UTC(2025, 0, 1));
 * const ids = new Snowflake({ worker: 7, clock, wait: (ms) => clock.advance(ms) });
 * const a = ids.next();
 * const b = ids.next();
 * b > a; // true
 * ids.decode(b); // { id: b, timestamp: Date.UTC(2025, 0, 1), worker: 7, sequence: 1 }
 * ```
 */
export class Snowflake {
  readonly #worker: number;
  readonly #epoch: number;
  readonly #rollbackToleranceMs: number;
  readonly #workerBits: number;
  readonly #sequenceBits: number;
  readonly #clock: Clock;
  readonly #wait: (ms: number) => void;
  readonly #maxSequence: number;
  readonly #sequences: bigint[];
  readonly #timeShift: bigint;
  readonly #workerPart: bigint;
  /** The last millisecond the time bits can number (`epoch + 2^timeBits - 1`). */
  readonly #endsAt: number;
  #last = Number.NEGATIVE_INFINITY;
  #sequence = 0;
  #base = 0n;
  #lease: SnowflakeLease | undefined;
  readonly #emit: Emit | undefined;

  constructor(options: SnowflakeOptions) {
    if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
    knownKeys('', options, SNOWFLAKE_OPTIONS);
    this.#workerBits = bits('workerBits', options.workerBits ?? 10);
    this.#sequenceBits = bits('sequenceBits', options.sequenceBits ?? 12);
    const timeBits = ID_BITS - this.#workerBits - this.#sequenceBits;
    if (timeBits < 32) {
      throw new InvalidOptionError(
        'workerBits',
        `with sequenceBits at most ${ID_BITS - 32} bits`,
        options.workerBits,
      );
    }
    this.#worker = nonNegativeInt('worker', options.worker);
    if (this.#worker >= 2 ** this.#workerBits) {
      throw new InvalidOptionError('worker', `an integer in 0..${2 ** this.#workerBits - 1}`, options.worker);
    }
    const epoch = options.epoch instanceof Date ? options.epoch.getTime() : (options.epoch ?? DEFAULT_EPOCH);
    this.#epoch = nonNegativeInt('epoch', epoch);
    this.#rollbackToleranceMs = nonNegativeInt(
      'rollbackToleranceMs',
      options.rollbackToleranceMs ?? DEFAULT_TOLERANCE_MS,
    );
    this.#clock = options.clock ?? anchoredClock();
    if (typeof this.#clock?.now !== 'function')
      throw new InvalidOptionError('clock', 'an object with now()', options.clock);
    this.#wait = options.wait ?? defaultWait;
    if (typeof this.#wait !== 'function') throw new InvalidOptionError('wait', 'a function', options.wait);
    this.#emit = observing(options.observer, 'observer');

    const now = Math.floor(this.#clock.now());
    if (now < this.#epoch) {
      throw new InvalidOptionError(
        'epoch',
        `a time not after now (${new Date(now).toISOString()})`,
        options.epoch,
      );
    }
    const lifetime = parseDuration(options.lifetime ?? DEFAULT_LIFETIME, 'lifetime');
    const endsAt = this.#epoch + 2 ** timeBits - 1;
    if (now + lifetime > endsAt) {
      throw new InvalidOptionError(
        'lifetime',
        `within what the layout can number: ${timeBits} time bits from epoch ${new Date(this.#epoch).toISOString()} run out at ${new Date(endsAt).toISOString()}, ${Math.max(0, Math.floor((endsAt - now) / 86_400_000))} days from now`,
        options.lifetime ?? DEFAULT_LIFETIME,
      );
    }
    this.#maxSequence = 2 ** this.#sequenceBits - 1;
    this.#sequences = sequenceTable(this.#sequenceBits);
    this.#timeShift = BigInt(this.#workerBits + this.#sequenceBits);
    this.#workerPart = BigInt(this.#worker) << BigInt(this.#sequenceBits);
    this.#endsAt = endsAt;
    if (options.lastTimestamp !== undefined) {
      const last = nonNegativeInt('lastTimestamp', options.lastTimestamp);
      if (last - now > this.#rollbackToleranceMs) {
        throw new ClockRollbackError(last - now, this.#rollbackToleranceMs, 'persisted before a restart');
      }
      // Ids may have been issued anywhere in `last`'s millisecond: the next one needs a later one.
      this.#last = last;
      this.#sequence = this.#maxSequence;
    }
  }

  /** This generator's worker id (fixed when made, as the layout: private behind getters). */
  get worker(): number {
    return this.#worker;
  }

  /** Milliseconds since 1970 at which the time part starts. */
  get epoch(): number {
    return this.#epoch;
  }

  /** How far back the clock may step and be waited out, in ms. */
  get rollbackToleranceMs(): number {
    return this.#rollbackToleranceMs;
  }

  /** Bits of the worker id. */
  get workerBits(): number {
    return this.#workerBits;
  }

  /** Bits of the per-millisecond sequence. */
  get sequenceBits(): number {
    return this.#sequenceBits;
  }

  /**
   * A generator whose last timestamp is persisted in `store` under `name` (memory or Redis), so a
   * clock that is behind after a restart is caught: no id is issued until the clock has passed
   * every timestamp the previous run may have used. The generator holds a lease: it persists
   * `now + lease` ahead of time and renews it at half-time; if the store cannot renew it before it
   * runs out, `next()` throws a store error rather than issue an id the next run could repeat. A
   * quick restart (the clock behind the last lease by at most `lease`) waits until it has passed
   * it; a clock further behind than `lease + rollbackToleranceMs` is a rollback: `ERR_CLOCK_ROLLBACK`.
   *
   * @example
   * ```ts
   * const store = memoryStore();
   * const ids = await Snowflake.start({ worker: 1, store, name: 'orders' });
   * typeof ids.next(); // 'bigint'
   * ```
   */
  static async start(
    options: SnowflakeOptions & { store: Store; name: string; lease?: Duration },
  ): Promise<Snowflake> {
    if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
    knownKeys('', options, START_OPTIONS);
    const ops = requireOps(options.store, 'store', 'timestampAdvance', 'leaseRenew');
    const name = optionWithinLimit('name', nonEmptyString('name', options.name), 'nameBytes');
    const every = parseDuration(options.lease ?? DEFAULT_LEASE, 'lease');
    // Checked before it is used to wait out a quick restart (a NaN would wait forever).
    const tolerance = nonNegativeInt(
      'rollbackToleranceMs',
      options.rollbackToleranceMs ?? DEFAULT_TOLERANCE_MS,
    );
    // A live run keeps its lease about half a lease ahead of its clock; a new run does not wait
    // for a lease within the tolerance of its own clock. At or below twice the tolerance, a live
    // run's lease would look like a finished one: no twin could be told from a restart.
    if (every < 2 || every <= 2 * tolerance) {
      throw new InvalidOptionError(
        'lease',
        `longer than twice rollbackToleranceMs (${2 * tolerance} ms), and at least 2 ms`,
        options.lease,
      );
    }
    const own =
      options.lastTimestamp === undefined ? -1 : nonNegativeInt('lastTimestamp', options.lastTimestamp);
    const { store: _store, name: _name, lease: _lease, lastTimestamp: _own, ...given } = options;
    const rest: SnowflakeOptions = { ...given, clock: options.clock ?? anchoredClock() };
    // Every other option is checked by a generator made from them now, before the store is read or
    // a quick restart is waited out (a bad worker or `wait` found after a lease's wait wastes it).
    new Snowflake(rest);
    // The store's timestamp, or the caller's own `lastTimestamp` when that is later: neither run's
    // milliseconds may be used again.
    const stored = await ops.timestampAdvance(name, -1);
    const persisted = Math.max(stored, own);
    if (persisted >= 0) {
      // The previous run persisted a lease up to `lease` ms ahead of its clock: a quick restart finds
      // its clock behind it by as much, which is no rollback. That is waited out (asynchronously);
      // beyond lease + tolerance the clock did go back, and the constructor says so.
      const clock = rest.clock as Clock;
      for (;;) {
        const behind = persisted - Math.floor(clock.now());
        if (behind <= tolerance || behind > every + tolerance) break;
        if (options.wait !== undefined) options.wait(behind - tolerance);
        else await new Promise((resolve) => setTimeout(resolve, timerDelay(behind - tolerance))); // the loop re-checks
      }
    }
    const flake = new Snowflake(persisted >= 0 ? { ...rest, lastTimestamp: persisted } : rest);
    // The store records which run holds the name: a second live generator under it is refused at
    // start (the lease it found was renewed meanwhile), and a run whose name was taken over (it
    // stalled past its lease) stops renewing and fails once its own lease runs out.
    const lease = new SnowflakeLease(ops, name, every, stored, () => Math.max(flake.#now(), flake.#last));
    flake.#lease = lease;
    await lease.acquire(() => flake.#now());
    return flake;
  }

  /** Stops renewing the persisted lease (a generator from {@link Snowflake.start}); ids after it fail once it runs out. */
  close(): void {
    this.#lease?.close();
  }

  /** The next id: greater than every id this generator returned before. */
  next(): bigint {
    let ms = this.#now();
    if (ms < this.#last) ms = this.#waitFor(this.#last);
    if (ms === this.#last) {
      if (this.#sequence < this.#maxSequence) {
        const seq = ++this.#sequence;
        return this.#base | (this.#sequences[seq] ?? this.#sequenceBigint(seq));
      }
      ms = this.#waitFor(this.#last + 1);
    }
    if (ms > this.#endsAt || ms < this.#epoch) {
      // Past the lifetime checked at construction (or a clock moved before the epoch): the time
      // bits cannot hold it, and an id wider than 63 bits would be negative as a signed int64.
      throw new InvalidArgumentError(
        'clock.now()',
        `a time the layout can number, ${new Date(this.#epoch).toISOString()} to ${new Date(this.#endsAt).toISOString()}`,
        ms,
      );
    }
    this.#lease?.check(ms);
    this.#last = ms;
    this.#sequence = 0;
    this.#base = (BigInt(ms - this.#epoch) << this.#timeShift) | this.#workerPart;
    return this.#base;
  }

  /** Sequence numbers beyond the shared table are made once, on first use, per generator. */
  #sequenceBigint(seq: number): bigint {
    const big = BigInt(seq);
    this.#sequences[seq] = big;
    return big;
  }

  /** The fields of an id made with this layout and epoch. */
  decode(id: bigint): DecodedSnowflake {
    if (typeof id !== 'bigint' || id < 0n || id >= 1n << BigInt(ID_BITS)) {
      throw new InvalidArgumentError('id', 'a non-negative 63-bit bigint', id);
    }
    return {
      id,
      timestamp: Number(id >> this.#timeShift) + this.#epoch,
      worker: Number((id >> BigInt(this.#sequenceBits)) & BigInt(2 ** this.#workerBits - 1)),
      sequence: Number(id & BigInt(this.#maxSequence)),
    };
  }

  #now(): number {
    // Checked before any state changes: a NaN taken as a time would reset the sequence and repeat ids.
    return wholeMs(this.#clock.now(), 'clock.now()');
  }

  /** Waits until the clock reads at least `target`; throws when it falls back beyond tolerance. */
  #waitFor(target: number): number {
    for (;;) {
      const ms = this.#now();
      if (ms >= target) return ms;
      const behind = this.#last - ms;
      const emit = this.#emit;
      if (behind > this.#rollbackToleranceMs) {
        if (emit !== undefined)
          emit({ part: 'snowflake', type: 'rollback-refused', cause: 'rollback', ms: behind });
        throw new ClockRollbackError(behind, this.#rollbackToleranceMs, 'at run time');
      }
      if (emit !== undefined) {
        emit({
          part: 'snowflake',
          type: 'wait',
          cause: behind > 0 ? 'rollback' : 'sequence',
          ms: target - ms,
        });
      }
      this.#wait(target - ms);
    }
  }
}

function bits(option: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > 22) {
    throw new InvalidOptionError(option, 'an integer in 0..22', value);
  }
  return value;
}

function sequenceTable(sequenceBits: number): bigint[] {
  // Shared and precomputed up to 12 bits (4096 bigints, ~100 KB); a wider sequence gets its own
  // table, filled as far as one millisecond ever went (never 2^22 bigints up front).
  if (sequenceBits > 12) return sequenceTable(12).slice();
  let table = sequenceTables.get(sequenceBits);
  if (table === undefined) {
    // One bigint per sequence value, made once: an id then costs one bigint OR, not three.
    table = Array.from({ length: 2 ** sequenceBits }, (_, i) => BigInt(i));
    sequenceTables.set(sequenceBits, table);
  }
  return table;
}
