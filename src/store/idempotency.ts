/**
 * The store operations behind idempotent calls (DESIGN §3.6). One record per (name, key): either
 * `in-progress` (held by a lease owner token until its lease expires) or `completed` (a serialized
 * value until it expires). Each operation is one atomic step of the store (one synchronous call in
 * memory, one Lua script on Redis, one statement on PostgreSQL), and every time in it is the
 * store's own (the memory store's clock, Redis `TIME`, the database's clock), so a FakeClock drives
 * leases and ttl in tests and clients with skewed clocks agree.
 *
 * They are optional in the {@link Store} contract: a store without them cannot back
 * `createIdempotency`, which says so when it is given such a store.
 */

/** {@link IdempotencyStoreOps.idempotencyBegin}'s command. */
export interface IdempotencyBeginCommand {
  /** The idempotency's name: records of different names never meet. */
  readonly name: string;
  readonly key: string;
  /** The payload's hash ('' when payloads are not hashed): the same key with another hash is a mismatch. */
  readonly payloadHash: string;
  /** The caller's lease owner token (unique per call): it fences renew, complete and release. */
  readonly token: string;
  /** How long the lease lasts from the store's now, ms (a positive safe integer). */
  readonly leaseMs: number;
}

/**
 * What `idempotencyBegin` found, after acting on it:
 * - `acquired`: no live record (none, an expired completed one, or an in-progress one whose lease
 *   ran out: `takeover: true`); the caller now holds an in-progress record until `leaseExpiresAt`.
 * - `completed`: a completed record with the same hash: its serialized value, nothing changed.
 * - `in-progress`: another holder's live lease with the same hash: nothing changed; it expires in
 *   `retryAfterMs` (the earliest a takeover can happen).
 * - `mismatch`: a live record (either state) with another payload hash: nothing changed.
 */
export type IdempotencyBeginReply =
  | {
      readonly outcome: 'acquired';
      readonly takeover: boolean;
      readonly leaseExpiresAt: number;
      readonly now: number;
    }
  | { readonly outcome: 'completed'; readonly value: string; readonly now: number }
  | { readonly outcome: 'in-progress'; readonly retryAfterMs: number; readonly now: number }
  | { readonly outcome: 'mismatch'; readonly now: number };

/**
 * What {@link IdempotencyStoreOps.idempotencyGet} found: `completed` (a live completed record: a
 * begin would replay it), `in-progress` (a live lease), `absent` (no record, or a dead one).
 */
export type IdempotencyRecordState = 'completed' | 'in-progress' | 'absent';

/** The idempotency operations of a store. */
export interface IdempotencyStoreOps {
  /** Reads the record of (name, key) and takes it when no live record is there, in one atomic step. */
  idempotencyBegin?(command: IdempotencyBeginCommand): Promise<IdempotencyBeginReply>;
  /**
   * Extends the lease of `token` to now + `leaseMs`, iff `token` holds a live lease on the record
   * (in progress, held by `token`, now < its lease expiry). A holder whose lease ran out or was
   * taken over gets `false` and must stop.
   */
  idempotencyRenew?(name: string, key: string, token: string, leaseMs: number): Promise<boolean>;
  /**
   * Turns the in-progress record held by `token` into a completed one holding `value` until now +
   * `ttlMs`, iff `token` holds a live lease on it (fencing: a holder whose lease ran out or was
   * taken over cannot store its result: `false`; an expired lease counts as lost whether or not
   * another caller took it yet, so every store answers the same whatever its expiry sweeps did).
   */
  idempotencyComplete?(
    name: string,
    key: string,
    token: string,
    value: string,
    ttlMs: number,
  ): Promise<boolean>;
  /** Deletes the in-progress record (its `fn` failed), iff `token` holds a live lease on it. */
  idempotencyRelease?(name: string, key: string, token: string): Promise<boolean>;
  /**
   * The state of the record of (name, key), read on the store's clock, changing nothing: the
   * read-only "seen before?" of a buffer layer (`idempotency.seen`, docs/pre-checks.md). Optional
   * even beside the four above: `run` never needs it.
   */
  idempotencyGet?(name: string, key: string): Promise<IdempotencyRecordState>;
}
