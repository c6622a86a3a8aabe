// The public result types narrow on their discriminant. Checked twice: by `npm run typecheck`
// (tsconfig includes test/: every `expectTypeOf` must hold and every `@ts-expect-error` line must
// be an error, or the check fails), and by vitest, which runs each case against real results so
// the values agree with what the types claim.
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  type AdmitOutcome,
  type AllowedDecision,
  type AllowingReason,
  type ApplyResult,
  createLedger,
  createLimiter,
  createReorderer,
  createTenantRegistry,
  type Decision,
  type DecisionReason,
  FakeClock,
  type GapRange,
  type GuardDecision,
  type LimitDecision,
  memoryStore,
  type PushResult,
  type RefusedDecision,
  type RefusingReason,
  type Release,
  ReorderBuffer,
  SequenceGuard,
  SignatureWindow,
  type TenantEvent,
  type TickResult,
  VersionGate,
  type VersionGateResult,
} from '../../src/index.js';
import type { LedgerApplyResult } from '../../src/store/index.js';
import type { Verdict } from '../../src/windows/limits/types.js';

/** Fails to compile when a switch over a union forgot a member. */
function exhaustive(value: never): never {
  throw new Error(`unexpected ${String(value)}`);
}

describe('ApplyResult / LedgerApplyResult', () => {
  it('narrows on outcome: seq is a number when applied, absent otherwise', async () => {
    expectTypeOf<ApplyResult>().toEqualTypeOf<LedgerApplyResult>();
    const ledger = createLedger({ capacity: 2 });
    const entry = { owner: 'p1', signature: 's1', deltas: { coins: 5 }, order: 1 };
    const results: ApplyResult[] = [await ledger.apply(entry), await ledger.apply(entry)];
    await ledger.apply({ ...entry, signature: 's2', order: 2 });
    await ledger.apply({ ...entry, signature: 's3', order: 3 }); // evicts s1: horizon 1
    results.push(await ledger.apply({ ...entry, signature: 's0', order: 0 }));
    expect(results.map((r) => r.outcome)).toEqual(['applied', 'duplicate', 'stale']);

    for (const r of results) {
      // @ts-expect-error: only an applied result has a seq
      const unnarrowed: number = r.seq;
      void unnarrowed;
      switch (r.outcome) {
        case 'applied': {
          expectTypeOf(r.seq).toEqualTypeOf<number>();
          expect(r.seq).toBe(1);
          break;
        }
        case 'duplicate':
        case 'stale': {
          expectTypeOf(r.seq).toEqualTypeOf<undefined>();
          // @ts-expect-error: a duplicate or stale answer wrote nothing
          const seq: number = r.seq;
          void seq;
          expect('seq' in r).toBe(false);
          break;
        }
        default:
          exhaustive(r);
      }
      expectTypeOf(r.balances).toEqualTypeOf<Record<string, bigint>>();
    }
  });

  it('refuses the impossible combinations', () => {
    const ok: LedgerApplyResult[] = [
      { outcome: 'applied', balances: {}, seq: 1 },
      { outcome: 'duplicate', balances: {} },
      { outcome: 'stale', balances: {} },
    ];
    // @ts-expect-error: an applied result has a seq
    const noSeq: LedgerApplyResult = { outcome: 'applied', balances: {} };
    // @ts-expect-error: a duplicate wrote no journal entry
    const dupSeq: LedgerApplyResult = { outcome: 'duplicate', balances: {}, seq: 2 };
    expect([...ok, noSeq, dupSeq]).toHaveLength(5);
  });
});

describe('Decision', () => {
  it('narrows on allowed: the reason and the wait of each side', async () => {
    expectTypeOf<Decision>().toEqualTypeOf<AllowedDecision | RefusedDecision>();
    expectTypeOf<AllowingReason | RefusingReason>().toEqualTypeOf<DecisionReason>();
    expectTypeOf<AllowingReason>().toEqualTypeOf<'allowed' | 'degraded-allow' | 'degraded-local'>();
    expectTypeOf<RefusingReason>().toEqualTypeOf<
      'limited' | 'blocked' | 'cost-exceeds-limit' | 'degraded-deny' | 'degraded-local'
    >();
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      algorithm: 'fixed-window',
      limit: 1,
      window: '1s',
    });
    const decisions: Decision[] = [await limiter.take('u'), await limiter.take('u'), await limiter.take('u')];
    expect(decisions.map((d) => d.reason)).toEqual(['allowed', 'limited', 'blocked']);
    for (const d of decisions) {
      // @ts-expect-error: the wait is 0 only when allowed
      const zero: 0 = d.retryAfterMs;
      void zero;
      if (d.allowed) {
        expectTypeOf(d).toEqualTypeOf<AllowedDecision>();
        expectTypeOf(d.reason).toEqualTypeOf<AllowingReason>();
        expectTypeOf(d.retryAfterMs).toEqualTypeOf<0>();
        expect(d.retryAfterMs).toBe(0);
        const reason = d.reason;
        // @ts-expect-error: an admitted decision is never 'limited'
        if (reason === 'limited') throw new Error('unreachable');
        // @ts-expect-error: nor 'blocked'
        if (reason === 'blocked') throw new Error('unreachable');
        switch (reason) {
          case 'allowed':
          case 'degraded-allow':
          case 'degraded-local':
            break;
          default:
            exhaustive(reason);
        }
      } else {
        expectTypeOf(d).toEqualTypeOf<RefusedDecision>();
        expectTypeOf(d.reason).toEqualTypeOf<RefusingReason>();
        expectTypeOf(d.retryAfterMs).toEqualTypeOf<number>();
        expect(d.retryAfterMs).toBeGreaterThan(0);
        const reason = d.reason;
        // @ts-expect-error: a refused decision is never 'allowed'
        if (reason === 'allowed') throw new Error('unreachable');
        // @ts-expect-error: nor 'degraded-allow'
        if (reason === 'degraded-allow') throw new Error('unreachable');
        switch (reason) {
          case 'limited':
          case 'blocked':
          case 'cost-exceeds-limit':
          case 'degraded-deny':
          case 'degraded-local':
            break;
          default:
            exhaustive(reason);
        }
      }
    }
  });

  it('refuses the impossible combinations', () => {
    const fields = { limit: 1, remaining: 0, resetAt: 0, bound: 'l', at: 0, limits: [] };
    // @ts-expect-error: an admitted decision has no wait
    const waits: Decision = { ...fields, allowed: true, retryAfterMs: 5, reason: 'allowed' };
    // @ts-expect-error: an admitted decision is not 'limited'
    const limited: Decision = { ...fields, allowed: true, retryAfterMs: 0, reason: 'limited' };
    // @ts-expect-error: a refusal is not 'allowed'
    const allowed: Decision = { ...fields, allowed: false, retryAfterMs: 5, reason: 'allowed' };
    const local: Decision[] = [
      { ...fields, allowed: true, retryAfterMs: 0, reason: 'degraded-local', isFirstInDuration: false },
      { ...fields, allowed: false, retryAfterMs: 5, reason: 'degraded-local', isFirstInDuration: false },
    ];
    expect([waits, limited, allowed, ...local]).toHaveLength(5);
  });

  it("each limit's part (LimitDecision, Verdict) narrows on allowed too", async () => {
    const limiter = createLimiter({
      limits: [
        { id: 'small', algorithm: 'gcra', limit: 1, window: '1s' },
        { id: 'large', algorithm: 'sliding-log', limit: 100, window: '1s' },
      ],
    });
    await limiter.take('u');
    const d = await limiter.take('u');
    expect(d.limits.map((p) => p.allowed)).toEqual([false, true]);
    for (const part of d.limits) {
      expectTypeOf(part).toEqualTypeOf<LimitDecision>();
      expectTypeOf(part).toExtend<Verdict>();
      if (part.allowed) {
        expectTypeOf(part.retryAfterMs).toEqualTypeOf<0>();
        expect(part.retryAfterMs).toBe(0);
      } else {
        expectTypeOf(part.retryAfterMs).toEqualTypeOf<number>();
        expect(part.retryAfterMs).toBeGreaterThan(0);
      }
      expectTypeOf(part.id).toEqualTypeOf<string>();
    }
    // @ts-expect-error: an allowed verdict has no wait
    const v: Verdict = { allowed: true, remaining: 1, resetAt: 0, retryAfterMs: 3 };
    expect(v.allowed).toBe(true);
  });

  it('the tenant registry answers the same Decision, and its events narrow on type', async () => {
    const tenants = createTenantRegistry();
    const events: TenantEvent[] = [];
    tenants.on((e) => events.push(e));
    tenants.init('acme', { algorithm: 'gcra', limit: 1, window: '1s' });
    const d = await tenants.take('acme', 'u');
    expectTypeOf(d).toEqualTypeOf<Decision>();
    if (d.allowed) expectTypeOf(d.retryAfterMs).toEqualTypeOf<0>();
    await tenants.reset('acme');
    for (const e of events) {
      if (e.type === 'reset') expectTypeOf(e.keys).toEqualTypeOf<number>();
      // @ts-expect-error: only a reset counts keys
      if (e.type === 'init') void e.keys;
    }
    expect(events.map((e) => e.type)).toEqual(['init', 'reset']);
  });
});

describe('PushResult / Release / TickResult', () => {
  it('narrows on outcome: what each push released', () => {
    const b = new ReorderBuffer<string>({ capacity: 4, gapTimeout: 0, overflow: 'advance', maxMissing: 1 });
    const results: PushResult<string>[] = [
      b.push(0, 'a', 0), // released
      b.push(2, 'c', 0), // buffered
      b.push(2, 'c', 0), // duplicate
      b.push(9, 'j', 0), // overflow: 1 and 3..5 given up, c released, j buffered
      b.push(1, 'b', 0), // forgotten by a missing set of 1: stale
      b.push(5, 'f', 0), // missing: late
    ];
    expect(results.map((r) => r.outcome)).toEqual([
      'released',
      'buffered',
      'duplicate',
      'buffered',
      'stale',
      'late',
    ]);
    for (const r of results) {
      // Unnarrowed, a result may be empty: its first release may be undefined.
      expectTypeOf(r[0]).toEqualTypeOf<Release<string, false> | Release<string, true> | undefined>();
      // Never called: the wrong accesses only need to fail to compile.
      // @ts-expect-error: possibly undefined
      const first = () => r[0].item;
      void first;
      switch (r.outcome) {
        case 'released':
        case 'buffered':
        case 'duplicate': {
          for (const x of r) expectTypeOf(x.late).toEqualTypeOf<false>();
          expectTypeOf(r.gaps).toEqualTypeOf<readonly GapRange[]>();
          if (r.outcome === 'released') expect(r[0]).toEqual({ seq: 0, item: 'a', late: false });
          break;
        }
        case 'late': {
          expectTypeOf(r.length).toEqualTypeOf<1>();
          for (const x of r) expectTypeOf(x.late).toEqualTypeOf<true>();
          expectTypeOf(r.gaps).toEqualTypeOf<readonly []>();
          expect([...r]).toEqual([{ seq: 5, item: 'f', late: true }]);
          break;
        }
        case 'stale':
        case 'rejected': {
          expectTypeOf(r.length).toEqualTypeOf<0>();
          expectTypeOf(r[0]).toEqualTypeOf<undefined>();
          // @ts-expect-error: nothing was released
          const none = () => r[0].item;
          void none;
          expect(r).toHaveLength(0);
          expect(r.gaps).toHaveLength(0);
          break;
        }
        default:
          exhaustive(r);
      }
    }
    // What an overflow released with a buffered push, and the gaps it gave up on.
    expect([...(results[3] ?? [])].map((x) => x.item)).toEqual(['c']);
    expect(results[3]?.gaps).toEqual([
      { from: 1, to: 1 },
      { from: 3, to: 5 },
    ]);
    // The array methods stay callable on the union.
    expectTypeOf(results[0]?.map((x) => x.item)).toEqualTypeOf<string[] | undefined>();
  });

  it('a tick releases nothing late; a reorderer push answers the same union', async () => {
    const b = new ReorderBuffer<string>({ capacity: 4, gapTimeout: 10 });
    b.push(1, 'b', 0);
    const t = b.tick(10);
    expectTypeOf(t).toEqualTypeOf<TickResult<string>>();
    for (const x of t.released) expectTypeOf(x.late).toEqualTypeOf<false>();
    expect(t.released).toEqual([{ seq: 1, item: 'b', late: false }]);
    const r = await createReorderer<string>({ capacity: 4, gapTimeout: '1h', onRelease: () => {} });
    const pushed = r.push(0, 'a');
    expectTypeOf(pushed).toEqualTypeOf<PushResult<string>>();
    if (pushed.outcome === 'late') for (const x of pushed) expectTypeOf(x.late).toEqualTypeOf<true>();
    expect(pushed.outcome).toBe('released');
    await r.close();
  });
});

describe('the other results of the public surface', () => {
  it('VersionGateResult, GuardDecision and AdmitOutcome are closed unions', async () => {
    const gate = new VersionGate({ store: memoryStore() });
    const g: VersionGateResult = await gate.upsert('k', 1, 'v');
    // Every outcome carries the stored version: there is nothing more to narrow.
    expectTypeOf(g.version).toEqualTypeOf<bigint>();
    const outcome = g.outcome;
    switch (outcome) {
      case 'applied':
      case 'duplicate':
      case 'stale':
        break;
      default:
        exhaustive(outcome);
    }
    // @ts-expect-error: not an outcome of a version gate
    if (g.outcome === 'rejected') throw new Error('unreachable');

    const guard: GuardDecision = new SequenceGuard().check(0);
    expectTypeOf(guard).toEqualTypeOf<'process' | 'drop' | 'hold'>();
    const admitted: AdmitOutcome = new SignatureWindow({ capacity: 1 }).admit('s');
    expectTypeOf(admitted).toEqualTypeOf<'fresh' | 'duplicate' | 'stale'>();
    expect([g.outcome, guard, admitted]).toEqual(['applied', 'process', 'fresh']);
  });
});
