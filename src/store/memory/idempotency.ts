import { type Clock, wholeMs } from '../../core/clock.js';
import { InvalidArgumentError, StoreError } from '../../core/errors.js';
import type {
  IdempotencyBeginCommand,
  IdempotencyBeginReply,
  IdempotencyRecordState,
  IdempotencyStoreOps,
} from '../idempotency.js';

interface IdemRecord {
  inProgress: boolean;
  /** The lease owner token (in progress), or the token that completed it. */
  token: string;
  readonly payloadHash: string;
  /** The serialized value, once completed. */
  value: string;
  readonly createdAt: number;
  /** The lease's end (in progress) or the value's (completed): the record is dead from then on. */
  expiresAt: number;
}

// Expired records go in a full pass over the map, no timer per key, as the limiter's states
// (src/store/memory/limiter.ts). A pass runs once the begins since the last pass reach
// max(SWEEP_MIN, S), S the records that pass left (live then). Only a begin creates a record,
// at most one, so between two passes fewer than max(SWEEP_MIN, S) were created:
//   size <= S + max(SWEEP_MIN, S) <= 2 * max(SWEEP_MIN, S)
// where S is at most the keys begun within one ttl (completed) or one lease (in progress) before
// that pass. Amortised: a pass visits at most 2 * max(SWEEP_MIN, S) records, and max(SWEEP_MIN, S)
// begins came since the last one: at most 2 visits per begin.
const SWEEP_MIN = 1024;

const NOT_APPLIED = { outcome: 'not-applied', retriable: false } as const;

/**
 * The idempotency records of the memory store (DESIGN §3.6): the reference model of the Redis
 * scripts. Each operation is one synchronous block on the store's clock, so it is atomic, and an
 * expired record (a lease that ran out, a value past its ttl) is dead to every operation whether
 * or not the sweep has dropped it yet: the answers never depend on when the sweep ran.
 */
export class MemoryIdempotencyRecords implements Required<IdempotencyStoreOps> {
  readonly #clock: Clock;
  readonly #records = new Map<string, IdemRecord>();
  readonly #sweepMin: number;
  #sinceSweep = 0;
  #survivors = 0;

  constructor(clock: Clock, sweepMin = SWEEP_MIN) {
    this.#clock = clock;
    this.#sweepMin = sweepMin;
  }

  /** Records held, expired ones included until the sweep passes: at most {@link sweepBound}. */
  get size(): number {
    return this.#records.size;
  }

  /** The bound `size` stays within until the next sweep (see SWEEP_MIN). */
  get sweepBound(): number {
    return 2 * Math.max(this.#sweepMin, this.#survivors);
  }

  idempotencyBegin(cmd: IdempotencyBeginCommand): Promise<IdempotencyBeginReply> {
    try {
      return Promise.resolve(this.#begin(cmd));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  idempotencyRenew(name: string, key: string, token: string, leaseMs: number): Promise<boolean> {
    try {
      checkMs('leaseMs', leaseMs);
      const now = this.#now('idempotencyRenew');
      const record = this.#held(name, key, token, now);
      if (record !== undefined) record.expiresAt = now + leaseMs;
      return Promise.resolve(record !== undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  idempotencyComplete(
    name: string,
    key: string,
    token: string,
    value: string,
    ttlMs: number,
  ): Promise<boolean> {
    try {
      checkMs('ttlMs', ttlMs);
      if (typeof value !== 'string') throw new InvalidArgumentError('value', 'a string', value);
      const now = this.#now('idempotencyComplete');
      const record = this.#held(name, key, token, now);
      if (record !== undefined) {
        record.inProgress = false;
        record.value = value;
        record.expiresAt = now + ttlMs;
      }
      return Promise.resolve(record !== undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  idempotencyGet(name: string, key: string): Promise<IdempotencyRecordState> {
    try {
      if (typeof name !== 'string') throw new InvalidArgumentError('name', 'a string', name);
      if (typeof key !== 'string') throw new InvalidArgumentError('key', 'a string', key);
      const now = this.#now('idempotencyGet');
      const record = this.#records.get(recordKey(name, key));
      // Dead (its lease or ttl past) answers as absent, whether or not the sweep dropped it yet.
      if (record === undefined || now >= record.expiresAt) return Promise.resolve('absent');
      return Promise.resolve(record.inProgress ? 'in-progress' : 'completed');
    } catch (err) {
      return Promise.reject(err);
    }
  }

  idempotencyRelease(name: string, key: string, token: string): Promise<boolean> {
    try {
      const now = this.#now('idempotencyRelease');
      const held = this.#held(name, key, token, now) !== undefined;
      if (held) this.#records.delete(recordKey(name, key));
      return Promise.resolve(held);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #begin(cmd: IdempotencyBeginCommand): IdempotencyBeginReply {
    for (const field of ['name', 'key', 'payloadHash', 'token'] as const) {
      if (typeof cmd?.[field] !== 'string') throw new InvalidArgumentError(field, 'a string', cmd?.[field]);
    }
    checkMs('leaseMs', cmd.leaseMs);
    const now = this.#now('idempotencyBegin');
    this.#sweepWhenDue(now);
    const id = recordKey(cmd.name, cmd.key);
    const record = this.#records.get(id);
    if (record !== undefined && now < record.expiresAt) {
      if (record.payloadHash !== cmd.payloadHash) return { outcome: 'mismatch', now };
      if (!record.inProgress) return { outcome: 'completed', value: record.value, now };
      return { outcome: 'in-progress', retryAfterMs: record.expiresAt - now, now };
    }
    const leaseExpiresAt = now + cmd.leaseMs;
    this.#records.set(id, {
      inProgress: true,
      token: cmd.token,
      payloadHash: cmd.payloadHash,
      value: '',
      createdAt: now,
      expiresAt: leaseExpiresAt,
    });
    return { outcome: 'acquired', takeover: record?.inProgress === true, leaseExpiresAt, now };
  }

  /** The record iff `token` holds a live lease on it. */
  #held(name: string, key: string, token: string, now: number): IdemRecord | undefined {
    const record = this.#records.get(recordKey(name, key));
    return record?.inProgress && record.token === token && now < record.expiresAt ? record : undefined;
  }

  #now(operation: string): number {
    try {
      return wholeMs(this.#clock.now(), 'store clock.now()');
    } catch (err) {
      throw new StoreError(operation, err, NOT_APPLIED);
    }
  }

  #sweepWhenDue(now: number): void {
    if (++this.#sinceSweep < this.#sweepMin || this.#sinceSweep < this.#survivors) return;
    this.#sinceSweep = 0;
    for (const [id, record] of this.#records) if (now >= record.expiresAt) this.#records.delete(id);
    this.#survivors = this.#records.size;
  }
}

// Injective: the name's length says where the key starts.
function recordKey(name: string, key: string): string {
  return `${name.length}:${name}${key}`;
}

// A lease or ttl the store adds to its time: a positive safe integer of ms, so the sum stays exact.
function checkMs(path: string, ms: unknown): void {
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms <= 0 || ms > 2 ** 52) {
    throw new InvalidArgumentError(path, 'a positive safe integer of milliseconds (at most 2^52)', ms);
  }
}
