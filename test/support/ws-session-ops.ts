import fc from 'fast-check';
import type {
  BeginResult,
  Outcome,
  RecordResult,
  SessionRef,
  SessionStateStore,
} from '../../src/ws/session-state.js';

/**
 * Random operations on the session state of a few sessions, for comparing two stores (the memory
 * store is the reference model): tokens are named by which `open` returned them, so two stores'
 * answers compare though their tokens differ.
 */
export type SessionOp =
  | { readonly op: 'open'; readonly s: number }
  | { readonly op: 'touch'; readonly s: number; readonly t: number }
  | {
      readonly op: 'begin';
      readonly s: number;
      readonly t: number;
      readonly seq: number;
      readonly id: number;
    }
  /** The writer begins `seq`, a reconnect opens, the new writer begins `seq` (busy while leased). */
  | { readonly op: 'race'; readonly s: number; readonly seq: number; readonly id: number }
  | {
      readonly op: 'record';
      readonly s: number;
      readonly t: number;
      readonly seq: number;
      readonly id: number;
      readonly outcome: Outcome;
    };

const outcomeArb: fc.Arbitrary<Outcome> = fc.oneof(
  fc.constant({ outcome: 'handled' } as const),
  fc
    .nat({ max: 10_000 })
    .map((ms) => ({ outcome: 'limited', code: 'RATE_LIMITED', retryAfterMs: ms }) as const),
  fc
    .constantFrom('UNKNOWN_TYPE', 'BODY_REFUSED', 'HANDLER_FAILED')
    .map((code) => ({ outcome: 'rejected', code }) as const),
);

export function sessionOps(): fc.Arbitrary<SessionOp[]> {
  const s = fc.integer({ min: 0, max: 1 });
  // Mostly the newest two tokens and the first seqs and ids, so that a writer's begin of the seq a
  // replaced token leased (busy), and that token's record of it, come up often.
  const t = fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: 1 }), weight: 3 },
    fc.integer({ min: 0, max: 4 }),
  );
  const seq = fc.oneof(
    { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 3 },
    fc.integer({ min: 1, max: 10 }),
  );
  const id = fc.oneof(
    { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 3 },
    fc.integer({ min: 1, max: 10 }),
  );
  return fc.array(
    fc.oneof(
      { arbitrary: fc.record({ op: fc.constant('open' as const), s }), weight: 2 },
      { arbitrary: fc.record({ op: fc.constant('touch' as const), s, t }), weight: 1 },
      { arbitrary: fc.record({ op: fc.constant('begin' as const), s, t, seq, id }), weight: 3 },
      { arbitrary: fc.record({ op: fc.constant('race' as const), s, seq, id }), weight: 1 },
      {
        arbitrary: fc.record({ op: fc.constant('record' as const), s, t, seq, id, outcome: outcomeArb }),
        weight: 4,
      },
    ),
    { maxLength: 60, size: 'medium' },
  );
}

/** Runs `ops` on `store`; one answer per op, with tokens replaced by their open's number. */
export async function runOps(
  store: SessionStateStore,
  refs: readonly SessionRef[],
  ops: readonly SessionOp[],
) {
  const tokens: string[][] = refs.map(() => []);
  const answers: unknown[] = [];
  for (const o of ops) {
    const ref = refs[o.s] as SessionRef;
    const mine = tokens[o.s] as string[];
    if (o.op === 'open') {
      const { token, ...rest } = await store.open(ref);
      mine.push(token);
      answers.push(rest);
      continue;
    }
    if (o.op === 'race') {
      const id = `id-${o.id}`;
      const first = seen(store, await store.begin(ref, mine[mine.length - 1] ?? 'never-opened', o.seq, id));
      const { token, ...rest } = await store.open(ref);
      mine.push(token);
      // One answer per op: the three, together.
      answers.push([first, rest, seen(store, await store.begin(ref, token, o.seq, id))]);
      continue;
    }
    // A token index past the opens is a token no open returned.
    const token = mine[mine.length - 1 - o.t] ?? 'never-opened';
    if (o.op === 'touch') {
      answers.push(await store.touch(ref, token));
      continue;
    }
    const id = `id-${o.id}`;
    const answer =
      o.op === 'begin'
        ? await store.begin(ref, token, o.seq, id)
        : await store.record(ref, token, o.seq, id, o.outcome);
    answers.push(seen(store, answer));
  }
  return answers;
}

/** Two stores' clocks differ: a busy answer compares by whether its wait is within the lease. */
function seen(store: SessionStateStore, answer: BeginResult | RecordResult): unknown {
  return answer.kind === 'busy'
    ? { kind: 'busy', withinLease: answer.retryAfterMs >= 1 && answer.retryAfterMs <= store.leaseMs }
    : answer;
}
