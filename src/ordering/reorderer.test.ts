import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryStore } from '../store/memory/memory-store.js';
import type { GapRange, Release } from '../windows/reorder-buffer.js';
import { createReorderer } from './reorderer.js';

const clock = { now: () => Date.now() };

describe('createReorderer (timer-driven)', () => {
  afterEach(() => vi.useRealTimers());

  it('force-advances a hole when its timeout falls due, without another push', async () => {
    vi.useFakeTimers();
    const out: Release<string>[] = [];
    const gaps: GapRange[] = [];
    const r = await createReorderer<string>({
      next: 1,
      capacity: 16,
      gapTimeout: '250ms',
      clock,
      onRelease: (x) => void out.push(x),
      onGap: (g) => void gaps.push(g),
    });
    r.push(1, 'a');
    r.push(3, 'c');
    await vi.advanceTimersByTimeAsync(249);
    expect(gaps).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(gaps).toEqual([{ from: 2, to: 2 }]);
    expect(r.push(2, 'b').outcome).toBe('late');
    await r.close();
    expect(out.map((x) => [x.seq, x.late])).toEqual([
      [1, false],
      [3, false],
      [2, true],
    ]);
  });

  it('a gap timeout longer than setTimeout allows (30 days) waits in clamped steps, not a busy loop', async () => {
    vi.useFakeTimers();
    const delays: number[] = [];
    const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    const gaps: GapRange[] = [];
    const r = await createReorderer<string>({
      next: 1,
      capacity: 16,
      gapTimeout: '30d',
      clock,
      onRelease: () => {},
      onGap: (g) => void gaps.push(g),
    });
    r.push(3, 'c');
    for (const call of setTimeoutSpy.mock.calls) delays.push(Number(call[1]));
    expect(delays.length).toBeGreaterThan(0);
    expect(Math.max(...delays)).toBeLessThanOrEqual(2 ** 31 - 1);
    await vi.advanceTimersByTimeAsync(2 ** 31 - 1); // the first (clamped) firing: nothing is due yet
    expect(gaps).toEqual([]);
    expect(setTimeoutSpy.mock.calls.length).toBeLessThan(10);
    await vi.advanceTimersByTimeAsync(30 * 86_400_000 - (2 ** 31 - 1));
    expect(gaps).toEqual([{ from: 1, to: 2 }]);
    setTimeoutSpy.mockRestore();
    await r.close();
  });

  it('runs async effects one at a time, in order; a failed effect stops the stream', async () => {
    const log: number[] = [];
    const r = await createReorderer<number>({
      capacity: 8,
      gapTimeout: '1s',
      onRelease: async (x) => {
        await new Promise((res) => setTimeout(res, 3 - (x.seq % 3)));
        if (x.seq === 4) throw new Error('effect failed');
        log.push(x.seq);
      },
    });
    for (const s of [2, 0, 1, 3, 4, 5]) r.push(s, s);
    await expect(r.drained()).rejects.toThrow('effect failed');
    expect(log).toEqual([0, 1, 2, 3]);
    expect(() => r.push(6, 6)).toThrow('effect failed');
  });

  it('a restarted consumer continues from the checkpoint: buffered items, missing set and position kept', async () => {
    const store = memoryStore();
    const effects: [number, boolean][] = [];
    const options = {
      capacity: 32,
      gapTimeout: 1000,
      clock,
      checkpoint: { store, name: 'orders-partition-0', every: 1 },
      onRelease: (x: Release<string>) => void effects.push([x.seq, x.late]),
    } as const;
    const first = await createReorderer<string>(options);
    for (const s of [0, 1, 2, 5, 6]) first.push(s, `e${s}`);
    first.buffer.tick(Date.now() + 1000); // gives up 3..4 by hand (no waiting in a unit test)
    first.push(8, 'e8');
    await first.checkpoint();
    // The process dies here (no close). A new one starts from the checkpoint.
    const second = await createReorderer<string>(options);
    expect(second.buffer.next).toBe(7);
    expect(second.buffer.missing()).toEqual([{ from: 3, to: 4 }]);
    expect(second.push(0, 'e0').outcome).toBe('duplicate');
    expect(second.push(4, 'e4').outcome).toBe('late');
    expect(second.push(7, 'e7').outcome).toBe('released'); // and 8, buffered before the crash
    await second.close();
    expect(effects).toEqual([
      [0, false],
      [1, false],
      [2, false],
      [4, true],
      [7, false],
      [8, false],
    ]);
    // 5 and 6 were released by the hand tick, outside the reorderer: not its effects.
    const stale = await store.checkpointSave?.('orders-partition-0', 1, '{}');
    expect(stale).toBe('stale');
  });

  it('by default waits out a hole on a monotonic clock: a wall clock stepped back does not stall it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    const gaps: GapRange[] = [];
    const r = await createReorderer<string>({
      next: 0,
      capacity: 8,
      gapTimeout: '50ms',
      onRelease: () => {},
      onGap: (g) => void gaps.push(g),
    });
    r.push(1, 'b');
    vi.setSystemTime(Date.now() - 2000); // an NTP step back of the wall clock: performance.now() goes on
    await vi.advanceTimersByTimeAsync(60);
    expect(gaps).toEqual([{ from: 0, to: 0 }]);
    await r.close();
  });

  for (const failure of ['throws', 'reads NaN'] as const) {
    it(`a clock that ${failure} when the timer is armed fails the run: no uncaught error, no busy timer`, async () => {
      let broken = false;
      let reads = 0;
      const failing = {
        now: () => {
          reads++;
          if (!broken) return Date.now();
          if (failure === 'throws') throw new Error('clock source unavailable');
          return Number.NaN;
        },
      };
      const uncaught: unknown[] = [];
      const onUncaught = (e: unknown) => uncaught.push(e);
      process.on('uncaughtException', onUncaught);
      try {
        const r = await createReorderer<string>({
          next: 0,
          capacity: 8,
          gapTimeout: '10ms',
          clock: failing,
          onRelease: () => {},
        });
        r.push(1, 'b');
        broken = true; // the timer, due in 10 ms, then finds the clock failing
        await new Promise((res) => setTimeout(res, 60));
        const before = reads;
        await new Promise((res) => setTimeout(res, 60));
        expect(reads - before).toBe(0);
        expect(uncaught).toEqual([]);
        await expect(r.drained()).rejects.toThrow(
          failure === 'throws' ? /clock source unavailable/ : /finite/,
        );
        expect(() => r.push(4, 'e')).toThrow();
        await r.close().catch(() => {});
      } finally {
        process.off('uncaughtException', onUncaught);
      }
    });
  }

  it('without a checkpoint store, items need not be JSON: close() and checkpoint() do not serialise them', async () => {
    const out: bigint[] = [];
    const r = await createReorderer<bigint>({
      next: 0,
      capacity: 8,
      gapTimeout: '1s',
      clock,
      onRelease: (x) => void out.push(x.item),
    });
    r.push(1, 1n); // held behind the hole at 0
    r.push(0, 0n);
    r.push(3, 3n); // held: still in the buffer at close
    await r.checkpoint();
    expect(r.push(2, 2n).outcome).toBe('released');
    await r.close();
    expect(out).toEqual([0n, 1n, 2n, 3n]);
  });

  it('pushRecovered: a re-sent late item is released but teaches no timeout', async () => {
    let now = 0;
    const r = await createReorderer<string>({
      next: 0,
      capacity: 8,
      gapTimeout: 'adaptive',
      clock: { now: () => now },
      onRelease: () => {},
    });
    r.push(1, 'b');
    now = 300;
    r.buffer.tick(); // 0 given up (initial timeout 250 ms)
    now = 320;
    expect(r.pushRecovered(0, 'a').outcome).toBe('late');
    expect(r.buffer.stats().adaptive?.samples).toBe(0);
    r.push(3, 'd');
    expect(r.push(2, 'c').outcome).toBe('released'); // a hole filled by the stream: learned
    expect(r.buffer.stats().adaptive?.samples).toBe(1);
    await r.close();
  });

  it('needs a store with checkpoints', async () => {
    await expect(
      createReorderer({
        capacity: 1,
        gapTimeout: 1,
        onRelease: () => {},
        checkpoint: { store: { kind: 'x' } as never, name: 'n' },
      }),
    ).rejects.toThrow(/checkpoint.store/);
  });
});
