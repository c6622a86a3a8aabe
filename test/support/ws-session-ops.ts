import fc from 'fast-check';
import type { Outcome, SessionRef, SessionStateStore } from '../../src/ws/session-state.js';

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
  const t = fc.integer({ min: 0, max: 4 });
  const seq = fc.integer({ min: 1, max: 10 });
  const id = fc.integer({ min: 1, max: 10 });
  return fc.array(
    fc.oneof(
      { arbitrary: fc.record({ op: fc.constant('open' as const), s }), weight: 1 },
      { arbitrary: fc.record({ op: fc.constant('touch' as const), s, t }), weight: 1 },
      { arbitrary: fc.record({ op: fc.constant('begin' as const), s, t, seq, id }), weight: 3 },
      {
        arbitrary: fc.record({ op: fc.constant('record' as const), s, t, seq, id, outcome: outcomeArb }),
        weight: 4,
      },
    ),
    { maxLength: 60 },
  );
}

/** Runs `ops` on `store`; the answers, with tokens replaced by their open's number. */
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
    // A token index past the opens is a token no open returned.
    const token = mine[mine.length - 1 - o.t] ?? 'never-opened';
    if (o.op === 'touch') {
      answers.push(await store.touch(ref, token));
      continue;
    }
    const id = `id-${o.id}`;
    answers.push(
      o.op === 'begin'
        ? await store.begin(ref, token, o.seq, id)
        : await store.record(ref, token, o.seq, id, o.outcome),
    );
  }
  return answers;
}
