import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import type { GuardGetEvent, OnceflowEvent } from '../core/observer.js';
import { createLookupGuard, type LookupGuard } from './lookup-guard.js';
import type { LookupGuardOptions } from './options.js';
import type { LookupGuardState } from './types.js';

// A backend of `rows` that counts its calls; `latencyMs` moves the fake clock during each call.
function setup(options: Partial<LookupGuardOptions<string>> = {}, latencyMs = 0) {
  const clock = new FakeClock(1_000_000);
  const rows = new Map<string, string>([
    ['a', 'A'],
    ['b', 'B'],
  ]);
  const calls: string[] = [];
  const changes: LookupGuardState[] = [];
  const guard = createLookupGuard<string>({
    lookup: async (key) => {
      calls.push(key);
      clock.advance(latencyMs);
      return rows.get(key) ?? null;
    },
    window: '10s',
    minSamples: 10,
    clock,
    onStateChange: (s) => changes.push(s),
    ...options,
  });
  return { clock, rows, calls, changes, guard };
}

// `n` gets of keys nobody has: 100% null answers.
async function flood(guard: LookupGuard<string>, n: number, prefix = 'ghost'): Promise<void> {
  for (let i = 0; i < n; i++) await guard.get(`${prefix}:${i}`);
}

const rejection = async (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => 'resolved',
    (e) => e,
  );

afterEach(() => vi.restoreAllMocks());

describe('createLookupGuard: normal mode', () => {
  it('every get reaches the lookup, repeats and null answers included', async () => {
    const { guard, calls } = setup({ known: { expected: 100 } });
    expect(await guard.get('a')).toBe('A');
    expect(await guard.get('zz')).toBeNull();
    expect(await guard.get('zz')).toBeNull();
    expect(calls).toEqual(['a', 'zz', 'zz']);
    expect(guard.state).toBe('normal');
  });

  it('undefined from the lookup is null', async () => {
    const guard = createLookupGuard<number>({ lookup: async () => undefined });
    expect(await guard.get('x')).toBeNull();
  });

  it('concurrent gets of one key share one lookup', async () => {
    const { guard, calls } = setup();
    const answers = await Promise.all([guard.get('a'), guard.get('a'), guard.get('b')]);
    expect(answers).toEqual(['A', 'A', 'B']);
    expect(calls).toEqual(['a', 'b']);
    expect(guard.stats().answers).toBe(3);
    expect(guard.stats().backendCalls).toBe(2);
  });

  it('a failed lookup rejects every waiting get, counts as a call, and is not reused', async () => {
    let fail = true;
    const guard = createLookupGuard<string>({
      lookup: async () => {
        if (fail) throw new Error('db down');
        return 'v';
      },
    });
    const [x, y] = await Promise.all([rejection(guard.get('k')), rejection(guard.get('k'))]);
    expect((x as Error).message).toBe('db down');
    expect(y).toBe(x);
    expect(guard.stats()).toMatchObject({ calls: 1, answers: 0 });
    fail = false;
    expect(await guard.get('k')).toBe('v');
  });

  it('a lookup that throws at once rejects and leaves nothing in flight', async () => {
    let fail = true;
    const guard = createLookupGuard<string>({
      lookup: ((key: string) => {
        if (fail) throw new Error('sync');
        return Promise.resolve(key);
      }) as (key: string) => Promise<string>,
    });
    expect(((await rejection(guard.get('k'))) as Error).message).toBe('sync');
    fail = false;
    expect(await guard.get('k')).toBe('k');
  });
});

describe('createLookupGuard: when it degrades', () => {
  it('above 80% null answers in a window of at least minSamples, not at 80% exactly', async () => {
    const { guard, changes } = setup();
    for (let i = 0; i < 2; i++) await guard.get('a');
    await flood(guard, 8); // 8 of 10: 80%, not above
    expect(guard.state).toBe('normal');
    await flood(guard, 1, 'more'); // 9 of 11: 81.8%
    expect(guard.state).toBe('degraded');
    expect(changes).toEqual(['degraded']);
  });

  it('not with fewer than minSamples answers, however many are null', async () => {
    const { guard } = setup();
    await flood(guard, 9);
    expect(guard.state).toBe('normal');
  });

  it('only on the last window: nulls older than the window do not count', async () => {
    const { guard, clock } = setup();
    await flood(guard, 9);
    clock.advance(10_000);
    await flood(guard, 1, 'late');
    expect(guard.state).toBe('normal');
    expect(guard.stats()).toMatchObject({ answers: 1, nulls: 1 });
  });

  it('p99 above 1 s (more than 1% of calls slower): 2 slow calls of 101 degrade, 1 of 100 does not', async () => {
    let latency = 0;
    const clock = new FakeClock(0);
    const guard = createLookupGuard<string>({
      lookup: async () => {
        clock.advance(latency);
        return 'v';
      },
      clock,
      window: '1h',
    });
    for (let i = 0; i < 99; i++) await guard.get(`k${i}`);
    latency = 1_001;
    await guard.get('slow-1');
    expect(guard.stats()).toMatchObject({ calls: 100, slowRatio: 0.01, nullRatio: 0 });
    expect(guard.state).toBe('normal');
    latency = 1_000; // at the threshold: not slow
    await guard.get('edge');
    expect(guard.state).toBe('normal');
    latency = 1_001;
    await guard.get('slow-2');
    expect(guard.state).toBe('degraded');
  });
});

describe('createLookupGuard: degraded mode', () => {
  async function degraded(options: Partial<LookupGuardOptions<string>> = {}) {
    const s = setup({ known: { expected: 1_000 }, ...options });
    s.guard.add('a');
    s.guard.add('b');
    await flood(s.guard, 10); // 10 of 10 null: degraded by the 10th answer
    expect(s.guard.state).toBe('degraded');
    s.calls.length = 0;
    return s;
  }

  it('a key the filter never saw answers null without the lookup', async () => {
    const { guard, calls } = await degraded();
    expect(await guard.get('never-seen')).toBeNull();
    expect(calls).toEqual([]);
    expect(guard.stats().absentByFilter).toBe(1);
  });

  it('a known key still reaches the lookup and gets its value', async () => {
    const { guard, calls } = await degraded();
    expect(await guard.get('a')).toBe('A');
    expect(calls).toEqual(['a']);
  });

  it('a null answer is reused for nullTtl, then asked again', async () => {
    const { guard, calls, clock } = await degraded({ nullTtl: '2s' });
    guard.add('gone'); // in the filter, but not in the rows: the lookup answers null
    expect(await guard.get('gone')).toBeNull();
    expect(await guard.get('gone')).toBeNull();
    expect(calls).toEqual(['gone']);
    expect(guard.stats().absentByNullCache).toBe(1);
    clock.advance(1_999);
    await guard.get('gone');
    expect(calls).toEqual(['gone']);
    clock.advance(1);
    await guard.get('gone');
    expect(calls).toEqual(['gone', 'gone']);
  });

  it('without `known`, the null cache alone: an unseen key reaches the lookup once per nullTtl', async () => {
    const s = setup();
    await flood(s.guard, 11);
    expect(s.guard.state).toBe('degraded');
    s.calls.length = 0;
    expect(await s.guard.get('ghost:0')).toBeNull(); // cached while the flood ran
    expect(await s.guard.get('new')).toBeNull();
    expect(await s.guard.get('new')).toBeNull();
    expect(s.calls).toEqual(['new']);
    expect(s.guard.stats().known).toBeNull();
  });

  it('add drops a cached null: a key created after its null answer is found at once', async () => {
    const { guard, rows, calls } = await degraded();
    guard.add('late');
    expect(await guard.get('late')).toBeNull(); // cached
    rows.set('late', 'L');
    guard.add('late');
    expect(await guard.get('late')).toBe('L');
    expect(calls).toEqual(['late', 'late']);
  });

  it('a lookup in flight when add is called: later gets do not join it, its null is not cached', async () => {
    const clock = new FakeClock(0);
    const rows = new Map<string, string>();
    const pending: Array<() => void> = [];
    const guard = createLookupGuard<string>({
      lookup: (key) => {
        const answer = rows.get(key) ?? null; // read when called, answered later
        return new Promise((resolve) => pending.push(() => resolve(answer)));
      },
      clock,
      nullTtl: '1h',
    });
    const before = guard.get('k');
    rows.set('k', 'K');
    guard.add('k');
    const after = guard.get('k');
    expect(pending.length).toBe(2);
    for (const release of pending) release();
    expect(await before).toBeNull();
    expect(await after).toBe('K');
    expect(guard.stats().cachedNulls).toBe(0);
  });

  it('a key learned from a non-null answer passes the filter later', async () => {
    const s = setup({ known: { expected: 1_000 } });
    s.rows.set('learned', 'X');
    expect(await s.guard.get('learned')).toBe('X'); // normal mode: the filter learns it
    await flood(s.guard, 20);
    expect(s.guard.state).toBe('degraded');
    expect(await s.guard.get('learned')).toBe('X');
  });

  it('rebuildKnown forgets keys not given (a deleted key) and keeps the state if a key is bad', async () => {
    const { guard, calls } = await degraded();
    expect(() => guard.rebuildKnown(['a', 42 as never])).toThrow(/key/);
    expect(await guard.get('b')).toBe('B'); // still in the filter
    guard.rebuildKnown(['a']);
    expect(await guard.get('b')).toBeNull();
    expect(calls).toEqual(['b']);
    expect(guard.stats().known).toMatchObject({ size: 1, hashes: 7 });
  });
});

describe('createLookupGuard: recovery (hysteresis)', () => {
  it('returns to normal only after a whole window without trouble', async () => {
    const { guard, clock, changes } = setup({ known: { expected: 100 } });
    guard.add('a');
    await flood(guard, 11);
    expect(guard.state).toBe('degraded');
    clock.advance(5_000);
    // Healthy traffic: after the 2nd get the window holds 10 nulls of 12 answers (83%, still
    // trouble), after the 3rd 10 of 13 (77%): the last trouble was seen at this instant.
    for (let i = 0; i < 50; i++) await guard.get('a');
    expect(guard.stats().nullRatio).toBeLessThan(0.8);
    expect(guard.state).toBe('degraded');
    clock.advance(5_000); // the flood has left the window, the ratio is 0: still not a whole window
    expect(guard.stats().nullRatio).toBe(0);
    expect(guard.state).toBe('degraded');
    clock.advance(4_999);
    expect(guard.state).toBe('degraded');
    clock.advance(1);
    expect(guard.state).toBe('normal');
    expect(changes).toEqual(['degraded', 'normal']);
  });

  it('a flood that goes on keeps it degraded: answers given by the filter count as nulls', async () => {
    const { guard, clock, calls } = setup({ known: { expected: 100 } });
    guard.add('a');
    for (let round = 0; round < 5; round++) {
      await flood(guard, 20, `r${round}`);
      clock.advance(5_000);
    }
    expect(guard.state).toBe('degraded');
    expect(calls.length).toBeLessThan(20); // only the flood that degraded it reached the lookup
  });

  it("recovers without traffic: the state is read at the clock's time", async () => {
    const { guard, clock } = setup();
    await flood(guard, 11);
    clock.advance(10_000);
    expect(guard.state).toBe('normal');
  });

  it('a throwing onStateChange is reported once as a warning and fails no get', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const { guard, clock } = setup({
      onStateChange: () => {
        throw new Error('dashboard down');
      },
    });
    await flood(guard, 11);
    clock.advance(10_000);
    expect(guard.state).toBe('normal');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toContain('dashboard down');
  });
});

describe('createLookupGuard: bad input', () => {
  const lookup = async () => null;
  it.each([
    [{}, 'lookup'],
    [{ lookup, window: '5ms' }, 'window'],
    [{ lookup, nullRatio: 0 }, 'nullRatio'],
    [{ lookup, nullRatio: 1.5 }, 'nullRatio'],
    [{ lookup, p99: 0 }, 'p99'],
    [{ lookup, nullTtl: 0 }, 'nullTtl'],
    [{ lookup, minSamples: 0 }, 'minSamples'],
    [{ lookup, maxNullKeys: 1_000_001 }, 'maxNullKeys'],
    [{ lookup, clock: {} }, 'clock'],
    [{ lookup, onStateChange: 'x' }, 'onStateChange'],
    [{ lookup, known: { expected: -1 } }, 'known.expected'],
    [{ lookup, known: { expected: 10, falsePositivRate: 0.1 } }, 'known.falsePositivRate'],
    [{ lookup, known: 'all' }, 'known'],
    [{ lookup, nullRatoi: 0.5 }, 'nullRatoi'],
  ])('refuses %o naming %s', (options, option) => {
    let err: unknown;
    try {
      createLookupGuard(options as never);
    } catch (e) {
      err = e;
    }
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as { option: string }).option).toBe(option);
  });

  it('an unknown option gets a did-you-mean', () => {
    expect(() => createLookupGuard({ lookup, nulTtl: '1s' } as never)).toThrow('did you mean `nullTtl`?');
  });

  it('bad durations are typed errors too', () => {
    let err: unknown;
    try {
      createLookupGuard({ lookup, window: '1 minute' as never });
    } catch (e) {
      err = e;
    }
    expect(isOnceflowError(err, 'ERR_INVALID_DURATION')).toBe(true);
  });

  it('a bad key rejects with ERR_INVALID_ARGUMENT before the lookup', async () => {
    const { guard, calls } = setup();
    for (const key of ['', 7, 'x'.repeat(4097)]) {
      expect(isOnceflowError(await rejection(guard.get(key as never)), 'ERR_INVALID_ARGUMENT')).toBe(true);
    }
    expect(() => guard.add('')).toThrow(/key/);
    expect(calls).toEqual([]);
    expect(guard.stats().answers).toBe(0);
  });
});

describe('createLookupGuard: events', () => {
  it('reports every get by outcome and every switch, under its name', async () => {
    const seen: OnceflowEvent[] = [];
    const { guard, clock } = setup({
      name: 'players',
      known: { expected: 100 },
      observer: (e) => seen.push(e),
    });
    guard.add('a'); // the keys that exist reach the filter
    guard.add('b');
    await flood(guard, 10); // 10 answers (minSamples), all null: degraded
    const [first, second] = await Promise.all([guard.get('ghost:new'), guard.get('a')]);
    expect([first, second]).toEqual([null, 'A']);
    await Promise.all([guard.get('b'), guard.get('b')]);
    const outcomes = seen
      .filter((e) => e.part === 'guard' && e.type === 'get')
      .map((e) => (e as GuardGetEvent).outcome);
    expect(outcomes).toEqual([...Array(10).fill('backend'), 'absent-filter', 'backend', 'backend', 'joined']);
    expect(seen.filter((e) => e.part === 'guard' && e.type === 'state')).toEqual([
      { part: 'guard', type: 'state', guard: 'players', state: 'degraded', nullRatio: 1, slowRatio: 0 },
    ]);
    clock.advance(20_000);
    expect(guard.state).toBe('normal');
    expect(seen.at(-1)).toMatchObject({ part: 'guard', type: 'state', state: 'normal' });
    for (const e of seen) expect(e).toMatchObject({ guard: 'players' });
  });
});

describe('a lookup that never answers', () => {
  it('rejects its gets after `timeout`, counts as a slow call, and the next get looks up again', async () => {
    const clock = new FakeClock(1_000_000);
    let calls = 0;
    const guard = createLookupGuard<string>({
      lookup: () => {
        calls++;
        return new Promise<string>(() => {});
      },
      window: '10s',
      minSamples: 1,
      p99: '10ms',
      timeout: '30ms',
      clock,
    });
    const first = guard.get('k');
    const joined = guard.get('k');
    for (const waiting of [first, joined]) {
      const error = await waiting.catch((err: unknown) => err);
      expect(isOnceflowError(error, 'ERR_STORE')).toBe(true);
      expect(String(error)).toMatch(/within 30 ms/);
    }
    // One call slower than p99 in the window (the fake clock never moved): degraded.
    expect(guard.stats().state).toBe('degraded');
    void guard.get('k').catch(() => {});
    expect(calls).toBe(2);
  });

  it('refuses a timeout that is not a duration above 0, by name', () => {
    expect(() => createLookupGuard({ lookup: async () => null, timeout: 0 })).toThrow(/timeout/);
  });
});
