import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runOps, sessionOps } from '../../test/support/ws-session-ops.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import type { SessionRef } from './session-state.js';
import { MemorySessionState } from './session-state-memory.js';

const ref: SessionRef = { user: 'u-1', session: 'q8mD2fP0rS1tU4vW6xY9zA' };
const handled = { outcome: 'handled' } as const;

function clocked(maxInFlight = 3, sessionTtlMs = 10_000) {
  const clock = { t: 1_000_000 };
  const store = new MemorySessionState({ maxInFlight, sessionTtlMs, now: () => clock.t });
  return { clock, store };
}

describe('MemorySessionState', () => {
  it('runs the next seq, records it once, and answers a re-send with the same outcome', async () => {
    const { store } = clocked();
    const { token, continued, nextSeq } = await store.open(ref);
    expect({ continued, nextSeq }).toEqual({ continued: false, nextSeq: 1 });
    expect(await store.begin(ref, token, 1, 'a')).toEqual({ kind: 'run' });
    const limited = { outcome: 'limited', code: 'RATE_LIMITED', retryAfterMs: 850 } as const;
    expect(await store.record(ref, token, 1, 'a', limited)).toEqual({ kind: 'recorded' });
    expect(await store.record(ref, token, 1, 'a', handled)).toEqual({ kind: 'stale' });
    expect(await store.begin(ref, token, 1, 'a')).toEqual({
      kind: 'decided',
      outcome: limited,
      duplicate: true,
    });
    expect(await store.begin(ref, token, 1, 'b')).toEqual({ kind: 'conflict' });
    expect(await store.begin(ref, token, 2, 'a')).toEqual({ kind: 'conflict' });
    expect(await store.begin(ref, token, 3, 'c')).toEqual({ kind: 'ahead' });
    expect(await store.begin(ref, token, 4, 'c')).toEqual({ kind: 'ahead' });
    expect(await store.begin(ref, token, 5, 'c')).toEqual({ kind: 'too-far' });
    expect(await store.record(ref, token, 3, 'c', handled)).toEqual({ kind: 'stale' });
    const again = await store.open(ref);
    expect({ continued: again.continued, nextSeq: again.nextSeq }).toEqual({ continued: true, nextSeq: 2 });
  });

  it('keeps the outcomes of the last maxInFlight seqs, and their ids', async () => {
    const { store } = clocked(3);
    const { token } = await store.open(ref);
    for (let s = 1; s <= 5; s++)
      expect(await store.record(ref, token, s, `m-${s}`, handled)).toEqual({ kind: 'recorded' });
    expect(await store.begin(ref, token, 2, 'm-2')).toEqual({ kind: 'forgotten' });
    expect(await store.begin(ref, token, 3, 'm-3')).toMatchObject({ kind: 'decided' });
    // m-1 left the window with its seq: the store can no longer tell it was used.
    expect(await store.begin(ref, token, 6, 'm-1')).toEqual({ kind: 'run' });
    expect(await store.begin(ref, token, 6, 'm-4')).toEqual({ kind: 'conflict' });
  });

  it('refuses begin and record of a replaced connection, changing nothing', async () => {
    const { store } = clocked();
    const a = await store.open(ref);
    const b = await store.open(ref);
    expect(await store.begin(ref, a.token, 1, 'x')).toEqual({ kind: 'replaced' });
    expect(await store.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'replaced' });
    expect(await store.begin(ref, b.token, 1, 'x')).toEqual({ kind: 'run' });
    expect(await store.record(ref, b.token, 1, 'x', handled)).toEqual({ kind: 'recorded' });
  });

  it('forgets a session sessionTtlMs after its last operation: continued false, the old connection expired', async () => {
    const { clock, store } = clocked(3, 10_000);
    const a = await store.open(ref);
    await store.record(ref, a.token, 1, 'x', handled);
    clock.t += 9_999;
    expect(await store.begin(ref, a.token, 2, 'y')).toEqual({ kind: 'run' });
    clock.t += 9_999;
    // Begun before and not recorded: its handler may have run.
    expect(await store.begin(ref, a.token, 2, 'y')).toEqual({ kind: 'run', again: true });
    clock.t += 10_000;
    expect(await store.begin(ref, a.token, 2, 'y')).toEqual({ kind: 'expired' });
    expect(await store.record(ref, a.token, 2, 'y', handled)).toEqual({ kind: 'expired' });
    const b = await store.open(ref);
    expect({ continued: b.continued, nextSeq: b.nextSeq }).toEqual({ continued: false, nextSeq: 1 });
    // A token of before the expiry never matches the new state's writer.
    expect(await store.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'replaced' });
  });

  it('holds only the sessions of the last sessionTtlMs: expired ones are dropped, not kept forever', async () => {
    const { clock, store } = clocked(3, 10_000);
    for (let i = 0; i < 50; i++)
      await store.open({ user: 'u-1', session: `gone-session-${String(i).padStart(4, '0')}` });
    clock.t += 5_000;
    await store.open(ref);
    clock.t += 5_000;
    const other = { user: 'u-2', session: 'q8mD2fP0rS1tU4vW6xY9zA' };
    await store.open(other);
    // The 50 first sessions are past their TTL; `ref` (5 s old) and `other` remain.
    expect((store as unknown as { states: Map<string, unknown> }).states.size).toBe(2);
    expect((await store.open(ref)).continued).toBe(true);
  });

  it('touch keeps the state of an open connection alive, for its writer only', async () => {
    const { clock, store } = clocked(3, 10_000);
    const a = await store.open(ref);
    for (let i = 0; i < 5; i++) {
      clock.t += 9_000;
      expect(await store.touch(ref, a.token)).toEqual({ kind: 'touched' });
    }
    const b = await store.open(ref);
    expect(b.continued).toBe(true);
    expect(await store.touch(ref, a.token)).toEqual({ kind: 'replaced' });
    clock.t += 10_000;
    expect(await store.touch(ref, b.token)).toEqual({ kind: 'expired' });
  });

  it('leases a running seq: the new writer waits, the replaced holder still records it, then it is decided', async () => {
    const { clock, store } = clocked(3, 60_000);
    const lease = store.leaseMs;
    expect(lease).toBe(30_000);
    const a = await store.open(ref);
    expect(await store.begin(ref, a.token, 1, 'x')).toEqual({ kind: 'run' });
    const b = await store.open(ref);
    clock.t += 1000;
    expect(await store.begin(ref, b.token, 1, 'x')).toEqual({ kind: 'busy', retryAfterMs: lease - 1000 });
    // The lease is on seq 1 only: the replaced holder begins nothing and records no other seq.
    expect(await store.begin(ref, a.token, 2, 'y')).toEqual({ kind: 'replaced' });
    expect(await store.record(ref, a.token, 2, 'y', handled)).toEqual({ kind: 'replaced' });
    expect(await store.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'recorded' });
    expect(await store.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'replaced' });
    expect(await store.begin(ref, b.token, 1, 'x')).toEqual({
      kind: 'decided',
      outcome: handled,
      duplicate: true,
    });
    expect(await store.begin(ref, b.token, 2, 'y')).toEqual({ kind: 'run' });
  });

  it('a released seq is a first run again, not `again`; a release by another token changes nothing', async () => {
    const store = new MemorySessionState({ maxInFlight: 3, sessionTtlMs: 60_000 });
    const a = await store.open(ref);
    expect(await store.begin(ref, a.token, 1, 'x')).toEqual({ kind: 'run' });
    expect(await store.release(ref, 'someone-else-token', 1)).toBe(false);
    expect(await store.release(ref, a.token, 2)).toBe(false);
    expect(await store.release(ref, a.token, 1)).toBe(true);
    const b = await store.open(ref);
    expect(await store.begin(ref, b.token, 1, 'x')).toEqual({ kind: 'run' });
  });

  it('a lease that ran out lets the new writer run the seq; the old holder then records nothing', async () => {
    const clock = { t: 1_000_000 };
    const store = new MemorySessionState({
      maxInFlight: 3,
      sessionTtlMs: 60_000,
      leaseMs: 500,
      now: () => clock.t,
    });
    const a = await store.open(ref);
    expect(await store.begin(ref, a.token, 1, 'x')).toEqual({ kind: 'run' });
    const b = await store.open(ref);
    clock.t += 499;
    expect(await store.begin(ref, b.token, 1, 'x')).toEqual({ kind: 'busy', retryAfterMs: 1 });
    clock.t += 1;
    // a's run began and recorded nothing: b's run is a second one.
    expect(await store.begin(ref, b.token, 1, 'x')).toEqual({ kind: 'run', again: true });
    expect(await store.record(ref, a.token, 1, 'x', handled)).toEqual({ kind: 'replaced' });
    // The lease is now b's: a third connection waits for b.
    const c = await store.open(ref);
    expect(await store.begin(ref, c.token, 1, 'x')).toEqual({ kind: 'busy', retryAfterMs: 500 });
    expect(await store.record(ref, b.token, 1, 'x', handled)).toEqual({ kind: 'recorded' });
    expect(await store.begin(ref, c.token, 1, 'x')).toMatchObject({ kind: 'decided' });
    for (const leaseMs of [99, 600_001, 1.5, '500'])
      expect(
        () => new MemorySessionState({ maxInFlight: 3, sessionTtlMs: 60_000, leaseMs } as never),
      ).toThrow(/leaseMs/);
  });

  it('keeps sessions of other users apart', async () => {
    const { store } = clocked();
    const a = await store.open(ref);
    await store.record(ref, a.token, 1, 'x', handled);
    const other = await store.open({ user: 'u-2', session: ref.session });
    expect(other.continued).toBe(false);
  });

  it('refuses bad input with a typed error naming it, changing no state', async () => {
    const { store } = clocked();
    const { token } = await store.open(ref);
    const bad: Array<[string, () => Promise<unknown>]> = [
      ['ref.session', () => store.begin({ user: 'u', session: 'short' }, token, 1, 'x')],
      ['ref.session', () => store.open({ user: 'u', session: 'q8mD2fP0rS1tU4vW6xY9z!' })],
      ['ref.user', () => store.open({ user: '', session: ref.session })],
      ['ref', () => store.open(null as unknown as SessionRef)],
      ['token', () => store.begin(ref, '', 1, 'x')],
      ['token', () => store.touch(ref, 5 as never)],
      ['seq', () => store.begin(ref, token, 0, 'x')],
      ['seq', () => store.record(ref, token, 1.5, 'x', handled)],
      ['seq', () => store.begin(ref, token, 2 ** 53, 'x')],
      ['id', () => store.begin(ref, token, 1, 'a b')],
      ['id', () => store.record(ref, token, 1, 'x'.repeat(129), handled)],
      ['outcome', () => store.record(ref, token, 1, 'x', { outcome: 'limited' } as never)],
      [
        'outcome',
        () => store.record(ref, token, 1, 'x', { outcome: 'rejected', code: 'RATE_LIMITED' } as never),
      ],
      ['outcome', () => store.record(ref, token, 1, 'x', { outcome: 'handled', code: 'X' } as never)],
    ];
    for (const [path, call] of bad) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).path).toBe(path);
    }
    expect(await store.begin(ref, token, 1, 'x')).toEqual({ kind: 'run' });
    expect(() => new MemorySessionState({ maxInFlight: 4, sessionTtl: 1000 } as never)).toThrow(
      InvalidOptionError,
    );
    expect(() => new MemorySessionState({ maxInFlight: 0, sessionTtlMs: 1000 })).toThrow(
      InvalidArgumentError,
    );
    expect(() => new MemorySessionState({ maxInFlight: 4, sessionTtlMs: 999 })).toThrow(InvalidArgumentError);
  });

  it('never records a seq twice, never past a gap, and the next seq only moves on record', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 4 }), sessionOps(), async (m, ops) => {
        const store = new MemorySessionState({ maxInFlight: m, sessionTtlMs: 60_000 });
        const refs = [ref, { user: 'u-2', session: ref.session }];
        const answers = await runOps(store, refs, ops);
        const next = [1, 1];
        ops.forEach((o, i) => {
          const a = answers[i] as { kind?: string; nextSeq?: number };
          if (o.op === 'open') expect(a.nextSeq).toBe(next[o.s]);
          if (o.op === 'record' && a.kind === 'recorded') {
            expect(o.seq).toBe(next[o.s]);
            next[o.s] = o.seq + 1;
          }
          if (o.op === 'begin' && a.kind === 'run') expect(o.seq).toBe(next[o.s]);
        });
      }),
      { numRuns: 300 },
    );
  });
});
