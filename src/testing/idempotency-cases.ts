/**
 * The idempotency conformance cases (the optional operations of `IdempotencyStoreOps`: begin,
 * renew, complete, release; DESIGN §3.6), as plain data. Names are the case's own (the kit
 * prefixes them), so cases never see each other's records.
 *
 * Time is the store's own (Redis `TIME`, the memory store's clock): no case sets it. A case
 * states only what holds whatever the time between its steps, except where a lease or ttl is
 * meant to run out: those are a few tens of ms, and a `sleep` step waits them out for real (at
 * least twice as long, so a slow machine only waits longer, never too little).
 */

/** What a begin must answer: the outcome and, per outcome, what is certain whatever the time. */
export type ExpectedBegin =
  | {
      outcome: 'acquired';
      /** Checked when given: only a fresh key's answer (`false`) is the same on every store. */
      takeover?: boolean;
    }
  | { outcome: 'completed'; value: string }
  | {
      outcome: 'in-progress';
      /** The holder's lease lasts at least this long from the reply (checked when given). */
      retryAfterAtLeastMs?: number;
    }
  | { outcome: 'mismatch' };

/**
 * One step of an idempotency case. `name` defaults to `'n'`, `key` to `'k'`, `hash` to `'h1'`,
 * `leaseMs` and `ttlMs` to 60 000 (nothing runs out within a case unless it says so).
 */
export type IdempotencyStep =
  | {
      op: 'begin';
      name?: string;
      key?: string;
      hash?: string;
      token: string;
      leaseMs?: number;
      expect: ExpectedBegin;
    }
  | { op: 'renew'; name?: string; key?: string; token: string; leaseMs?: number; expect: boolean }
  | {
      op: 'complete';
      name?: string;
      key?: string;
      token: string;
      value: string;
      ttlMs?: number;
      expect: boolean;
    }
  | { op: 'release'; name?: string; key?: string; token: string; expect: boolean }
  | {
      /** Begins with these tokens, all at once, on a free key: exactly one acquires, the others are in progress. */
      op: 'begin-race';
      name?: string;
      key?: string;
      hash?: string;
      tokens: string[];
      leaseMs?: number;
    }
  | {
      /** `idempotencyGet`: the record's state (suite `idempotency-get`). */
      op: 'get';
      name?: string;
      key?: string;
      expect: 'completed' | 'in-progress' | 'absent';
    }
  | { /** A real wait, for a lease or a ttl to run out on the store's clock. */ op: 'sleep'; ms: number };

/** One idempotency case: the steps in order on a fresh set of names. */
export interface IdempotencyCase {
  suite: 'idempotency' | 'idempotency-get';
  name: string;
  /** Which rule of DESIGN §3.6 the case pins down. */
  rule: string;
  steps: IdempotencyStep[];
}

/** The cases. Add to them when a rule is added; never edit one to make a store pass. */
export const idempotencyCases: readonly IdempotencyCase[] = deepFreeze<IdempotencyCase[]>([
  {
    suite: 'idempotency',
    name: 'begin-takes-a-free-key-once',
    rule: 'a begin on a free key acquires it (no takeover); another begin with the same hash finds it in progress, held for at most the lease',
    steps: [
      { op: 'begin', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'begin', token: 't2', expect: { outcome: 'in-progress' } },
      { op: 'begin', token: 't3', leaseMs: 1000, expect: { outcome: 'in-progress' } },
      { op: 'begin', key: 'other', token: 't4', expect: { outcome: 'acquired', takeover: false } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'begin-race-one-winner',
    rule: 'begins racing on a free key: exactly one acquires it, every other one finds it in progress',
    steps: [
      { op: 'begin-race', tokens: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] },
      { op: 'begin-race', key: 'second', hash: '', tokens: ['a', 'b', 'c', 'd'] },
    ],
  },
  {
    suite: 'idempotency',
    name: 'complete-then-replay',
    rule: "a completed record answers its value to every begin with the same hash, and is no holder's any more: renew, release and a second complete are refused and change nothing",
    steps: [
      { op: 'begin', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'complete', token: 't1', value: '{"id":"ch_1"}', expect: true },
      { op: 'begin', token: 't2', expect: { outcome: 'completed', value: '{"id":"ch_1"}' } },
      { op: 'renew', token: 't1', expect: false },
      { op: 'release', token: 't1', expect: false },
      { op: 'complete', token: 't1', value: 'again', expect: false },
      { op: 'complete', token: 't2', value: 'other', expect: false },
      { op: 'begin', token: 't3', expect: { outcome: 'completed', value: '{"id":"ch_1"}' } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'mismatch-in-either-state',
    rule: 'a live record, in progress or completed, answers mismatch to a begin with another payload hash, and nothing changes',
    steps: [
      { op: 'begin', hash: 'h1', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'begin', hash: 'h2', token: 't2', expect: { outcome: 'mismatch' } },
      { op: 'begin', hash: '', token: 't2', expect: { outcome: 'mismatch' } },
      { op: 'renew', token: 't1', expect: true },
      { op: 'complete', token: 't1', value: 'v', expect: true },
      { op: 'begin', hash: 'h2', token: 't3', expect: { outcome: 'mismatch' } },
      { op: 'begin', hash: 'h1', token: 't3', expect: { outcome: 'completed', value: 'v' } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'release-frees-the-key',
    rule: 'release by the holder deletes the in-progress record: the next begin acquires the key afresh, and a second release is refused',
    steps: [
      { op: 'begin', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'release', token: 't1', expect: true },
      { op: 'release', token: 't1', expect: false },
      { op: 'renew', token: 't1', expect: false },
      { op: 'complete', token: 't1', value: 'late', expect: false },
      { op: 'begin', hash: 'h2', token: 't2', expect: { outcome: 'acquired', takeover: false } },
      { op: 'begin', hash: 'h2', token: 't3', expect: { outcome: 'in-progress' } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'fenced-by-token',
    rule: "only the holder's token renews, completes or releases its record; another token is refused and changes nothing",
    steps: [
      { op: 'begin', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'renew', token: 't2', expect: false },
      { op: 'complete', token: 't2', value: 'forged', expect: false },
      { op: 'release', token: 't2', expect: false },
      { op: 'begin', token: 't3', expect: { outcome: 'in-progress' } },
      { op: 'complete', token: 't1', value: 'real', expect: true },
      { op: 'begin', token: 't3', expect: { outcome: 'completed', value: 'real' } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'renew-extends-the-lease',
    rule: "a renewal sets the holder's lease to the store's now plus the lease given",
    steps: [
      { op: 'begin', token: 't1', leaseMs: 1000, expect: { outcome: 'acquired', takeover: false } },
      { op: 'renew', token: 't1', leaseMs: 600_000, expect: true },
      // 600 s from the renewal: whatever the time since, far more than the first 1 s lease.
      { op: 'begin', token: 't2', expect: { outcome: 'in-progress', retryAfterAtLeastMs: 300_000 } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'lease-runs-out',
    rule: 'once its lease has run out on the store clock, the holder is refused renew, complete and release, and a begin (any hash) acquires the key',
    steps: [
      { op: 'begin', token: 't1', leaseMs: 30, expect: { outcome: 'acquired', takeover: false } },
      { op: 'begin', key: 'kept', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'sleep', ms: 80 },
      { op: 'renew', token: 't1', expect: false },
      { op: 'complete', token: 't1', value: 'late', expect: false },
      { op: 'release', token: 't1', expect: false },
      // The 60 s lease of the same token on another key still holds.
      { op: 'renew', key: 'kept', token: 't1', expect: true },
      { op: 'begin', hash: 'h2', token: 't2', expect: { outcome: 'acquired' } },
      { op: 'complete', token: 't1', value: 'late', expect: false },
      { op: 'complete', token: 't2', value: 'v2', expect: true },
      { op: 'begin', hash: 'h2', token: 't3', expect: { outcome: 'completed', value: 'v2' } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'ttl-runs-out',
    rule: 'a completed record answers until its ttl on the store clock; then it is gone: a begin (any hash) acquires the key',
    steps: [
      { op: 'begin', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'complete', token: 't1', value: 'short', ttlMs: 30, expect: true },
      { op: 'begin', key: 'long', token: 't2', expect: { outcome: 'acquired', takeover: false } },
      { op: 'complete', key: 'long', token: 't2', value: 'long', expect: true },
      { op: 'sleep', ms: 80 },
      { op: 'begin', key: 'long', token: 't3', expect: { outcome: 'completed', value: 'long' } },
      { op: 'begin', hash: 'h2', token: 't3', expect: { outcome: 'acquired', takeover: false } },
      { op: 'begin', hash: 'h2', token: 't4', expect: { outcome: 'in-progress' } },
      { op: 'complete', token: 't3', value: 'fresh', expect: true },
      { op: 'begin', hash: 'h2', token: 't4', expect: { outcome: 'completed', value: 'fresh' } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'names-and-keys-apart',
    rule: 'records of different names, or of different keys, never meet; a token holds only the record it began',
    steps: [
      { op: 'begin', name: 'a', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'begin', name: 'b', token: 't2', expect: { outcome: 'acquired', takeover: false } },
      { op: 'begin', name: 'a', key: 'k2', token: 't3', expect: { outcome: 'acquired', takeover: false } },
      { op: 'complete', name: 'b', token: 't1', value: 'x', expect: false },
      { op: 'complete', name: 'a', key: 'k2', token: 't1', value: 'x', expect: false },
      { op: 'complete', name: 'a', token: 't1', value: 'a', expect: true },
      { op: 'begin', name: 'b', token: 't4', expect: { outcome: 'in-progress' } },
      { op: 'begin', name: 'a', token: 't4', expect: { outcome: 'completed', value: 'a' } },
    ],
  },
  {
    suite: 'idempotency',
    name: 'texts-kept-exactly',
    rule: 'keys, hashes and values are kept byte for byte: empty value and hash, Unicode, braces, separators and JSON text',
    steps: [
      { op: 'begin', hash: '', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'complete', token: 't1', value: '', expect: true },
      { op: 'begin', hash: '', token: 't2', expect: { outcome: 'completed', value: '' } },
      { op: 'begin', hash: 'h1', token: 't2', expect: { outcome: 'mismatch' } },
      {
        op: 'begin',
        key: 'ключ 🔑 {tag}:*\n',
        hash: 'hé',
        token: 't3',
        expect: { outcome: 'acquired', takeover: false },
      },
      {
        op: 'complete',
        key: 'ключ 🔑 {tag}:*\n',
        token: 't3',
        value: '{"€":"✓ 🔑","n":{"$t":"n","v":"12345678901234567890"}}\u0000end',
        expect: true,
      },
      {
        op: 'begin',
        key: 'ключ 🔑 {tag}:*\n',
        hash: 'hé',
        token: 't4',
        expect: {
          outcome: 'completed',
          value: '{"€":"✓ 🔑","n":{"$t":"n","v":"12345678901234567890"}}\u0000end',
        },
      },
      {
        op: 'begin',
        key: 'ключ 🔑 {tag}:*',
        hash: 'hé',
        token: 't4',
        expect: { outcome: 'acquired', takeover: false },
      },
    ],
  },
]);

/**
 * The cases of the `idempotency-get` suite: `idempotencyGet`, the read-only state of a record (the
 * read of `idempotency.seen` and its pre-check, docs/pre-checks.md), optional beside the others.
 */
export const idempotencyGetCases: readonly IdempotencyCase[] = deepFreeze<IdempotencyCase[]>([
  {
    suite: 'idempotency-get',
    name: 'get-follows-the-record',
    rule: 'idempotencyGet answers absent before a begin, in-progress while a lease is held, completed after complete, absent again after a release; per name and key',
    steps: [
      { op: 'get', expect: 'absent' },
      { op: 'begin', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'get', expect: 'in-progress' },
      { op: 'get', key: 'other', expect: 'absent' },
      { op: 'get', name: 'other', expect: 'absent' },
      { op: 'complete', token: 't1', value: 'v', expect: true },
      { op: 'get', expect: 'completed' },
      { op: 'begin', key: 'r', token: 't2', expect: { outcome: 'acquired', takeover: false } },
      { op: 'release', key: 'r', token: 't2', expect: true },
      { op: 'get', key: 'r', expect: 'absent' },
    ],
  },
  {
    suite: 'idempotency-get',
    name: 'get-changes-nothing',
    rule: 'idempotencyGet is a read: the holder still renews and completes after it, and a begin still replays the value',
    steps: [
      { op: 'begin', token: 't1', expect: { outcome: 'acquired', takeover: false } },
      { op: 'get', expect: 'in-progress' },
      { op: 'get', expect: 'in-progress' },
      { op: 'renew', token: 't1', expect: true },
      { op: 'complete', token: 't1', value: 'v', expect: true },
      { op: 'get', expect: 'completed' },
      { op: 'begin', token: 't2', expect: { outcome: 'completed', value: 'v' } },
    ],
  },
  {
    suite: 'idempotency-get',
    name: 'get-dead-is-absent',
    rule: "a record whose lease ran out, or whose value is past its ttl, reads absent on the store's clock, whether or not the store has deleted it yet",
    steps: [
      {
        op: 'begin',
        key: 'lease',
        token: 't1',
        leaseMs: 40,
        expect: { outcome: 'acquired', takeover: false },
      },
      { op: 'begin', key: 'ttl', token: 't2', expect: { outcome: 'acquired', takeover: false } },
      { op: 'complete', key: 'ttl', token: 't2', value: 'v', ttlMs: 40, expect: true },
      { op: 'sleep', ms: 100 },
      { op: 'get', key: 'lease', expect: 'absent' },
      { op: 'get', key: 'ttl', expect: 'absent' },
    ],
  },
]);

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
