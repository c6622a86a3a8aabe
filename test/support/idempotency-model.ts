// The reference model of an idempotency record's state machine (DESIGN §3.6), as one pure
// function: (records, time, operation) -> (records, answer). No store, no clock, no promise: what
// every store's begin / renew / complete / release must answer, for property tests to compare;
// and the command sequences those tests generate.
import fc from 'fast-check';

/** A record: in progress (held by `token` until `expiresAt`) or completed (its value until `expiresAt`). */
export interface ModelRecord {
  readonly state: 'in-progress' | 'completed';
  readonly token: string;
  readonly hash: string;
  readonly value: string;
  readonly expiresAt: number;
}

export type ModelRecords = ReadonlyMap<string, ModelRecord>;

export type ModelOp =
  | { op: 'begin'; key: string; hash: string; token: string; leaseMs: number }
  | { op: 'renew'; key: string; token: string; leaseMs: number }
  | { op: 'complete'; key: string; token: string; value: string; ttlMs: number }
  | { op: 'release'; key: string; token: string };

export type ModelAnswer =
  | { outcome: 'acquired'; leaseExpiresAt: number }
  | { outcome: 'completed'; value: string }
  | { outcome: 'in-progress'; retryAfterMs: number }
  | { outcome: 'mismatch' }
  | boolean;

/** One atomic step at store time `now`: the records after it, and its answer. */
export function modelStep(
  records: ModelRecords,
  now: number,
  op: ModelOp,
): { records: ModelRecords; answer: ModelAnswer } {
  const record = records.get(op.key);
  // A record is dead from its expiry on, swept or not.
  const live = record !== undefined && now < record.expiresAt ? record : undefined;
  const next = new Map(records);
  if (op.op === 'begin') {
    if (live !== undefined) {
      if (live.hash !== op.hash) return { records, answer: { outcome: 'mismatch' } };
      if (live.state === 'completed') return { records, answer: { outcome: 'completed', value: live.value } };
      return { records, answer: { outcome: 'in-progress', retryAfterMs: live.expiresAt - now } };
    }
    const expiresAt = now + op.leaseMs;
    next.set(op.key, { state: 'in-progress', token: op.token, hash: op.hash, value: '', expiresAt });
    return { records: next, answer: { outcome: 'acquired', leaseExpiresAt: expiresAt } };
  }
  // Renew, complete and release need a live lease held by the token.
  if (live?.state !== 'in-progress' || live.token !== op.token) return { records, answer: false };
  if (op.op === 'renew') next.set(op.key, { ...live, expiresAt: now + op.leaseMs });
  else if (op.op === 'complete')
    next.set(op.key, { ...live, state: 'completed', value: op.value, expiresAt: now + op.ttlMs });
  else next.delete(op.key);
  return { records: next, answer: true };
}

/** A generated step: callers hold what their last begin acquired; `cleanup` only where a store sweeps. */
export type Command =
  | { op: 'begin'; caller: number; key: number; hash: number; leaseMs: number }
  | { op: 'renew'; caller: number; leaseMs: number }
  | { op: 'complete'; caller: number; value: string; ttlMs: number }
  | { op: 'release'; caller: number }
  | { op: 'cleanup'; limit: number }
  | { op: 'sleep'; ms: number };

/**
 * Command sequences over 3 callers and 2 keys, with `cleanup` steps when `cleanup` is set. Leases
 * and ttls of tens of ms (sleeps of the same order cross them), far above a store call (~0.1-1 ms
 * here, more on a loaded machine: only a lease edge inside that interval is missed).
 */
export function commands(cleanup: boolean): fc.Arbitrary<Command[]> {
  const lease = fc.constantFrom(40, 90, 160);
  return fc.array(
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({
          op: fc.constant('begin' as const),
          caller: fc.nat(2),
          key: fc.nat(1),
          hash: fc.constantFrom(0, 0, 0, 1),
          leaseMs: lease,
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({ op: fc.constant('renew' as const), caller: fc.nat(2), leaseMs: lease }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          op: fc.constant('complete' as const),
          caller: fc.nat(2),
          value: fc.constantFrom('', '{"v":1}', '"é😀\u0000"', 'x'.repeat(300)),
          ttlMs: fc.constantFrom(60, 250, 1000),
        }),
      },
      { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), caller: fc.nat(2) }) },
      {
        weight: cleanup ? 1 : 0,
        arbitrary: fc.record({ op: fc.constant('cleanup' as const), limit: fc.constantFrom(1, 1000) }),
      },
      {
        weight: 3,
        arbitrary: fc.record({ op: fc.constant('sleep' as const), ms: fc.constantFrom(0, 25, 70, 130, 200) }),
      },
    ),
    { minLength: 6, maxLength: 16 },
  );
}

/** Every answer of the four operations: a property's runs must reach each (one that never crossed a lease proves little). */
export const EVERY_ANSWER = [
  'acquired',
  'acquired+takeover',
  'completed',
  'in-progress',
  'mismatch',
  'renew:true',
  'renew:false',
  'complete:true',
  'complete:false',
  'release:true',
  'release:false',
] as const;
