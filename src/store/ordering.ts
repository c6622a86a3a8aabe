/**
 * The store operations the ordering half needs (DESIGN §3.4). Each one is atomic in the store that
 * implements it: one synchronous block in memory, one Lua script in Redis. They are optional in
 * the {@link Store} contract: a store without them cannot hold checkpoints, version gates or
 * snowflake clocks, and the factories that need them say so when they are given such a store.
 */
import { InvalidOptionError } from '../core/errors.js';

/** What a version-gated upsert decided, and the version stored after it. */
export interface VersionUpsertReply {
  readonly outcome: 'applied' | 'duplicate' | 'stale';
  /** The stored version after the call, as a canonical integer string. */
  readonly version: string;
}

/** The ordering operations of a store. */
export interface OrderingStoreOps {
  /**
   * Saves a reorder checkpoint iff `revision` is above the stored one (a delayed save, or a
   * consumer that lost its lease, cannot move a stream back). Returns the outcome.
   */
  checkpointSave?(name: string, revision: number, data: string): Promise<'saved' | 'stale'>;
  /** The saved checkpoint and its revision, or `undefined`. */
  checkpointLoad?(name: string): Promise<{ revision: number; data: string } | undefined>;
  /** Stores `value` under `key` iff `version` (a canonical integer string) is above the stored one. */
  versionUpsert?(gate: string, key: string, version: string, value: string): Promise<VersionUpsertReply>;
  /** The stored version and value under `key`, or `undefined`. */
  versionGet?(gate: string, key: string): Promise<{ version: string; value: string } | undefined>;
  /** Raises the persisted last timestamp of a generator to `ms` (never lowers it); returns it (-1: none). */
  timestampAdvance?(name: string, ms: number): Promise<number>;
  /**
   * Takes or renews a generator's lease: its persisted last timestamp, with the run that holds
   * it. Held when `run` holds it already, or (with `takeover`, the value a new run read and
   * waited out) when the stored lease is still at most that (nobody renewed it since); then raised
   * to `ms` (never lowered) and held by `run`. Refused otherwise: `ms` is the other run's lease.
   */
  leaseRenew?(name: string, run: string, ms: number, takeover: number | undefined): Promise<LeaseReply>;
}

/** The answer of {@link OrderingStoreOps.leaseRenew}. */
export interface LeaseReply {
  readonly held: boolean;
  readonly ms: number;
}

/** The operations of {@link OrderingStoreOps} that a feature needs, or a clear error. */
export function requireOps<K extends keyof OrderingStoreOps>(
  store: OrderingStoreOps & { kind?: string },
  option: string,
  ...ops: K[]
): Required<Pick<OrderingStoreOps, K>> {
  for (const op of ops) {
    if (typeof store?.[op] !== 'function') {
      throw new InvalidOptionError(
        option,
        `a store with ${ops.join(', ')} (memoryStore, the Redis or the Postgres store)`,
        store,
      );
    }
  }
  return store as Required<Pick<OrderingStoreOps, K>>;
}

/** Compares two canonical integer strings numerically. */
export function compareIntStrings(a: string, b: string): number {
  const na = a.startsWith('-');
  const nb = b.startsWith('-');
  if (na !== nb) return na ? -1 : 1;
  const x = na ? a.slice(1) : a;
  const y = nb ? b.slice(1) : b;
  const r = x.length !== y.length ? (x.length < y.length ? -1 : 1) : x === y ? 0 : x < y ? -1 : 1;
  return na ? -r : r;
}
