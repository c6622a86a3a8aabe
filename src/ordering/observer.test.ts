import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { StoreError } from '../core/errors.js';
import type { OnceflowEvent } from '../core/observer.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import type { GapRange } from '../windows/reorder-buffer.js';
import { createCompensator } from './compensator.js';
import { createReorderer } from './reorderer.js';
import { Snowflake } from './snowflake.js';
import { VersionGate } from './version-gate.js';

const warnings = () => vi.spyOn(process, 'emitWarning').mockImplementation(() => {});

describe('compensator observer', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('sees gaps queued, retries, give-ups (as onGiveUp does) and ranges filled', async () => {
    vi.useFakeTimers();
    const seen: OnceflowEvent[] = [];
    const gaveUp: GapRange[] = [];
    const failure = new Error('source down');
    const lane = createCompensator({
      retries: 1,
      backoff: { initial: 10, max: 10 },
      random: () => 0.5,
      request: async (range) => {
        if (range.from === 1) throw failure;
      },
      onGiveUp: (range) => gaveUp.push(range),
      observer: (e) => seen.push(e),
    });
    lane.add([{ from: 1, to: 2 }]);
    await vi.advanceTimersByTimeAsync(100);
    lane.add({ from: 7, to: 7 });
    await vi.advanceTimersByTimeAsync(100);
    lane.add({ from: 9, to: 9 });
    lane.fill(9); // filled by a late arrival before it was requested
    await vi.advanceTimersByTimeAsync(100);
    expect(seen).toEqual([
      { part: 'compensator', type: 'gap', from: 1, to: 2, backlog: 1 },
      { part: 'compensator', type: 'retry', from: 1, to: 2, attempt: 1, backlog: 1 },
      { part: 'compensator', type: 'give-up', from: 1, to: 2, backlog: 0, error: failure },
      { part: 'compensator', type: 'gap', from: 7, to: 7, backlog: 1 },
      { part: 'compensator', type: 'filled', from: 7, to: 7, backlog: 0 },
      { part: 'compensator', type: 'gap', from: 9, to: 9, backlog: 1 },
      { part: 'compensator', type: 'filled', from: 9, to: 9, backlog: 0 },
    ]);
    expect(gaveUp).toEqual([{ from: 1, to: 2 }]);
  });

  it('keeps compensating when the observer throws, and reports it once', async () => {
    const warn = warnings();
    const asked: GapRange[] = [];
    const lane = createCompensator({
      request: async (range) => {
        asked.push(range);
      },
      observer: () => {
        throw new Error('observer bug');
      },
    });
    lane.add({ from: 1, to: 1 });
    lane.add({ from: 3, to: 3 });
    await lane.idle();
    expect(asked).toEqual([
      { from: 1, to: 1 },
      { from: 3, to: 3 },
    ]);
    expect(warn).toHaveBeenCalledTimes(1);
  });
});

describe('reorderer observer', () => {
  it('passes its observer to its buffer, and onGap gets the ranges of the gap events', async () => {
    const seen: OnceflowEvent[] = [];
    const gaps: GapRange[] = [];
    const r = await createReorderer<string>({
      next: 1,
      capacity: 2,
      gapTimeout: '1h',
      onRelease: () => {},
      onGap: (g) => gaps.push(g),
      observer: (e) => seen.push(e),
    });
    r.push(5, 'e'); // overflow: 1..3 given up on
    await r.close();
    const gapEvents = seen.filter((e) => e.part === 'reorder' && e.type === 'gap');
    expect(gapEvents).toEqual([{ part: 'reorder', type: 'gap', from: 1, to: 3, cause: 'overflow' }]);
    expect(gaps).toEqual([{ from: 1, to: 3 }]);
  });
});

describe('version gate observer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('sees applied, stale, duplicate and failed, with the gate name', async () => {
    const seen: OnceflowEvent[] = [];
    const gate = new VersionGate({ store: memoryStore(), name: 'users', observer: (e) => seen.push(e) });
    await gate.upsert('u1', 2, 'b');
    await gate.upsert('u1', 1, 'a');
    await gate.upsert('u1', 2, 'b');
    const broken = wrapStore(memoryStore(), {
      versionUpsert: () => Promise.reject(new StoreError('versionUpsert', new Error('down'))),
    });
    const failing = new VersionGate({ store: broken, name: 'users', observer: (e) => seen.push(e) });
    await expect(failing.upsert('u1', 3, 'c')).rejects.toMatchObject({ code: 'ERR_STORE' });
    expect(seen.map((e) => (e.part === 'version-gate' ? [e.gate, e.outcome] : e))).toEqual([
      ['users', 'applied'],
      ['users', 'stale'],
      ['users', 'duplicate'],
      ['users', 'failed'],
    ]);
  });

  it('keeps upserting when the observer throws, and reports it once', async () => {
    const warn = warnings();
    const gate = new VersionGate({
      store: memoryStore(),
      observer: () => {
        throw new Error('observer bug');
      },
    });
    expect((await gate.upsert('k', 1, 1)).outcome).toBe('applied');
    expect((await gate.upsert('k', 1, 1)).outcome).toBe('duplicate');
    expect(warn).toHaveBeenCalledTimes(1);
  });
});

describe('snowflake observer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('sees rollback waits, spent-sequence waits and a refused rollback', () => {
    const seen: OnceflowEvent[] = [];
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const ids = new Snowflake({
      worker: 1,
      sequenceBits: 1,
      rollbackToleranceMs: 5,
      clock,
      wait: (ms) => clock.advance(ms),
      observer: (e) => seen.push(e),
    });
    ids.next();
    ids.next(); // the 2 ids of this millisecond are spent
    ids.next(); // waits 1 ms
    clock.set(clock.now() - 3);
    ids.next(); // 3 ms behind: waited out
    clock.set(clock.now() - 10);
    expect(() => ids.next()).toThrow(expect.objectContaining({ code: 'ERR_CLOCK_ROLLBACK' }));
    expect(seen).toEqual([
      { part: 'snowflake', type: 'wait', cause: 'sequence', ms: 1 },
      { part: 'snowflake', type: 'wait', cause: 'rollback', ms: 3 },
      { part: 'snowflake', type: 'rollback-refused', cause: 'rollback', ms: 10 },
    ]);
  });

  it('keeps issuing ids when the observer throws, and reports it once', () => {
    const warn = warnings();
    const clock = new FakeClock(Date.UTC(2025, 0, 1));
    const ids = new Snowflake({
      worker: 1,
      sequenceBits: 0,
      clock,
      wait: (ms) => clock.advance(ms),
      observer: () => {
        throw new Error('observer bug');
      },
    });
    const a = ids.next();
    const b = ids.next();
    const c = ids.next();
    expect(a < b && b < c).toBe(true);
    expect(warn).toHaveBeenCalledTimes(1);
  });
});
