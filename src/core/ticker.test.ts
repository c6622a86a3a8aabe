import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { nextTickAt, type Tick, ticker } from './ticker.js';

describe('ticker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_000_123);
  });
  afterEach(() => vi.useRealTimers());

  it('nextTickAt is the next aligned instant strictly after now', () => {
    expect(nextTickAt(999, 1000, 0)).toBe(1000);
    expect(nextTickAt(1000, 1000, 0)).toBe(2000);
    expect(nextTickAt(-1, 1000, 0)).toBe(0);
    expect(nextTickAt(4_000, 60_000, 5_000)).toBe(5_000);
    expect(nextTickAt(5_000, 60_000, 5_000)).toBe(65_000);
  });

  it('nextTickAt refuses what is not milliseconds, instead of a string or a past instant', () => {
    for (const [now, every, offset] of [
      [12_345, '1s', 0],
      [12_345, 0, 0],
      [12_345, -1000, 0],
      [Number.NaN, 1000, 0],
      [12_345, 1000, Number.POSITIVE_INFINITY],
    ]) {
      expect(() => nextTickAt(now as number, every as number, offset as number)).toThrow(
        /ERR_INVALID_ARGUMENT|Expected/,
      );
    }
  });

  it('ticks on multiples of every and does not drift when callbacks are slow', () => {
    const ticks: Tick[] = [];
    const t = ticker({
      every: '100ms',
      onTick: (tick) => {
        ticks.push(tick);
        vi.setSystemTime(Date.now() + 7); // each callback takes 7 ms
      },
    });
    vi.advanceTimersByTime(1000);
    t.stop();
    expect(ticks.length).toBeGreaterThanOrEqual(9);
    expect(ticks.map((x) => x.at)).toEqual(ticks.map((_, i) => 1_000_200 + i * 100));
    expect(ticks.every((x) => x.missed === 0)).toBe(true);
  });

  it('reports ticks missed while the process was busy, without replaying them', () => {
    const ticks: Tick[] = [];
    const t = ticker({ every: '100ms', onTick: (tick) => ticks.push(tick) });
    // The event loop is blocked: the timer for 1_000_200 runs at 1_000_632, past 300..600.
    vi.setSystemTime(1_000_555);
    vi.advanceTimersByTime(77);
    vi.advanceTimersByTime(68);
    t.stop();
    expect(ticks).toEqual([
      { at: 1_000_200, lateMs: 432, missed: 4 },
      { at: 1_000_700, lateMs: 0, missed: 0 },
    ]);
  });

  it('a wall clock stepped back re-aligns the ticks instead of going silent for the step', () => {
    // The clock is read through `now` (Date.now, stepped), the timers run on their own time.
    let step = 0;
    const ticks: number[] = [];
    const t = ticker({ every: '50ms', now: () => Date.now() - step, onTick: (tick) => ticks.push(tick.at) });
    vi.advanceTimersByTime(120); // ticks at ...150, ...200
    const before = ticks.length;
    step = 10_000; // NTP steps the clock back by 10 s
    vi.advanceTimersByTime(500);
    t.stop();
    expect(ticks.length - before).toBeGreaterThanOrEqual(9);
    expect(ticks.at(-1)).toBe(990_700); // 1_000_743 - 10 s, on a multiple of 50 of the new clock
  });

  it('align: an offset, or false for multiples from the start', () => {
    const at: number[] = [];
    const a = ticker({ every: '1s', align: '250ms', onTick: (tick) => at.push(tick.at) });
    vi.advanceTimersByTime(2000);
    a.stop();
    expect(at).toEqual([1_000_250, 1_001_250]);
    const b: number[] = [];
    const start = Date.now();
    const c = ticker({ every: '1s', align: false, onTick: (tick) => b.push(tick.at - start) });
    vi.advanceTimersByTime(2000);
    c.stop();
    expect(b).toEqual([1000, 2000]);
  });

  it('stop() ends it; bad options throw coded errors', () => {
    const fn = vi.fn();
    const t = ticker({ every: 10, onTick: fn });
    t.stop();
    vi.advanceTimersByTime(100);
    expect(fn).not.toHaveBeenCalled();
    expect(() => ticker({ every: 0, onTick: fn })).toThrow(/`every` to be a positive duration/);
    expect(() => ticker({ every: '1s', onTick: 1 as never })).toThrow(/`onTick` to be a function/);
    expect(() => ticker({ every: '1s', align: '1s', onTick: fn })).toThrow(
      /`align` to be an offset shorter than every/,
    );
    expect(() => ticker({ every: '1 sec' as never, onTick: fn })).toThrow(/ERR_INVALID_DURATION|`every`/);
  });
});

describe('ticker limits', () => {
  it('waits longer than setTimeout can in several timers (no 1 ms loop), and refuses a clock that is not a number', () => {
    vi.useFakeTimers();
    try {
      let t = 0;
      const ticks: number[] = [];
      const tk = ticker({ every: '30d', align: false, now: () => t, onTick: (x) => ticks.push(x.at) });
      vi.advanceTimersByTime(10); // would have fired ~10 times with a clamped 1 ms delay
      expect(ticks).toEqual([]);
      expect(vi.getTimerCount()).toBe(1);
      t = 30 * 86_400_000;
      vi.advanceTimersByTime(2 ** 31);
      vi.advanceTimersByTime(2 ** 31);
      expect(ticks).toEqual([30 * 86_400_000]);
      tk.stop();
    } finally {
      vi.useRealTimers();
    }
    expect(() => ticker({ every: '1s', now: () => Number.NaN, onTick: () => {} })).toThrow(/`now`/);
  });
});
