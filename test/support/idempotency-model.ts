// The reference model of an idempotency record's state machine (DESIGN §3.6), as one pure
// function: (records, time, operation) -> (records, answer). No store, no clock, no promise: what
// every store's begin / renew / complete / release must answer, for property tests to compare.

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
