import { afterEach, describe, expect, it, vi } from 'vitest';
import type { GapRange } from '../windows/reorder-buffer.js';
import { createCompensator } from './compensator.js';
import { createReorderer, type Reorderer } from './reorderer.js';

const flush = async () => {
  for (let i = 0; i < 5; i++) await vi.advanceTimersByTimeAsync(0);
};

describe('createCompensator', () => {
  afterEach(() => vi.useRealTimers());

  it('coalesces adjacent and overlapping ranges into one request, and never asks twice for a number', async () => {
    const asked: GapRange[] = [];
    const lane = createCompensator({ request: async (r) => void asked.push(r) });
    lane.add([
      { from: 3, to: 4 },
      { from: 5, to: 6 },
      { from: 4, to: 8 },
      { from: 20, to: 20 },
    ]);
    lane.add({ from: 6, to: 7 });
    await lane.idle();
    expect(asked).toEqual([
      { from: 3, to: 8 },
      { from: 20, to: 20 },
    ]);
  });

  it('a gap of billions of numbers (one corrupt sequence number far ahead) is requested piece by piece, in bounded memory', async () => {
    const asked: GapRange[] = [];
    const release: (() => void)[] = [];
    const lane = createCompensator({
      maxRange: 1000,
      request: (r) => {
        asked.push(r);
        return new Promise<void>((resolve) => release.push(resolve));
      },
    });
    const started = performance.now();
    lane.add({ from: 0, to: 4_999_999_936 });
    await new Promise((resolve) => setImmediate(resolve));
    // Two pieces in flight (concurrency 2), the rest one queued job: not five million.
    expect(asked).toEqual([
      { from: 0, to: 999 },
      { from: 1000, to: 1999 },
    ]);
    expect(lane.stats()).toMatchObject({ inFlight: 2, queued: 1 });
    expect(lane.pending()).toEqual([{ from: 0, to: 4_999_999_936 }]);
    // Late arrivals inside the huge queued job do not cancel it; the next pieces skip them.
    lane.fill(2000);
    for (const r of release.splice(0)) r();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked.slice(2)).toEqual([
      { from: 2001, to: 3000 },
      { from: 3001, to: 4000 },
    ]);
    expect(lane.pending()).toEqual([{ from: 2001, to: 4_999_999_936 }]);
    expect(performance.now() - started).toBeLessThan(1000);
    lane.close();
  });

  it('a job whose rest was filled while its first piece ran is done, not counted as cancelled', async () => {
    const asked: GapRange[] = [];
    const lane = createCompensator({ maxRange: 5, request: async (r) => void asked.push(r) });
    lane.add({ from: 0, to: 10 });
    for (let seq = 5; seq <= 10; seq++) lane.fill(seq);
    await lane.idle();
    expect(asked).toEqual([{ from: 0, to: 4 }]);
    expect(lane.stats()).toMatchObject({ requested: 1, cancelled: 0, queued: 0 });
  });

  it('a number that came late and went missing again is asked for by the job that holds it, never by two at once', async () => {
    vi.useFakeTimers();
    const asked: GapRange[] = [];
    let fail = true;
    const lane = createCompensator({
      backoff: { initial: '100ms', max: '100ms' },
      random: () => 0.5,
      request: async (r) => {
        asked.push(r);
        if (fail) {
          fail = false;
          throw new Error('source busy');
        }
      },
    });
    lane.add({ from: 0, to: 1 });
    await flush(); // 0-1 fails: a retry of 0-1 waits
    lane.fill(1); // 1 came late...
    lane.add({ from: 1, to: 2 }); // ...and is reported missing again, with 2
    await vi.advanceTimersByTimeAsync(200);
    await flush();
    // 2 alone is new; 1 is the waiting retry's again (0-1). No number in two requests.
    expect(asked).toEqual([
      { from: 0, to: 1 },
      { from: 2, to: 2 },
      { from: 0, to: 1 },
    ]);
    expect(lane.pending()).toEqual([]);
  });

  it('refuses a backoff a timer cannot wait (over 2^31 - 1 ms), naming it', () => {
    const request = async () => {};
    expect(() => createCompensator({ request, backoff: { initial: '30d' } })).toThrow(/`backoff.initial`/);
    expect(() => createCompensator({ request, backoff: { max: '60d' } })).toThrow(/`backoff.max`/);
    // Read on a first retry only: refused when made, not when a range would be lost to it.
    expect(() => createCompensator({ request, random: 'x' as never })).toThrow(/`random`/);
    expect(() => createCompensator({ request, backoff: { initial: '1d', max: '24d' } })).not.toThrow();
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    let inFlight = 0;
    let peak = 0;
    const lane = createCompensator({
      concurrency: 3,
      maxRange: 1,
      request: async () => {
        peak = Math.max(peak, ++inFlight);
        await new Promise((r) => setTimeout(r, 2));
        inFlight--;
      },
    });
    lane.add({ from: 0, to: 19 });
    await lane.idle();
    expect(peak).toBe(3);
    expect(lane.stats()).toMatchObject({ requested: 20, inFlight: 0 });
  });

  it('retries with exponential backoff and full jitter, then gives up with the last error', async () => {
    vi.useFakeTimers();
    const times: number[] = [];
    const gaveUp: [GapRange, unknown][] = [];
    const lane = createCompensator({
      retries: 3,
      backoff: { initial: 100, max: 250, factor: 2 },
      random: () => 0.999,
      request: async () => {
        times.push(Date.now());
        throw new Error(`attempt ${times.length}`);
      },
      onGiveUp: (range, err) => gaveUp.push([range, err]),
    });
    const t0 = Date.now();
    lane.add({ from: 1, to: 2 });
    await vi.advanceTimersByTimeAsync(2000);
    // Delays: 0.999 x min(250, 100 x 2^attempt) floored: 99, 199, 249 (+ at most 1 ms to start
    // the request from a macrotask, the lane's lower priority).
    expect(times[0]).toBe(t0);
    const delays = times.slice(1).map((t, i) => t - (times[i] as number));
    for (const [i, expected] of [99, 199, 249].entries()) {
      expect(delays[i]).toBeGreaterThanOrEqual(expected);
      expect(delays[i]).toBeLessThanOrEqual(expected + 1);
    }
    expect(gaveUp).toHaveLength(1);
    expect(gaveUp[0]?.[0]).toEqual({ from: 1, to: 2 });
    expect(String(gaveUp[0]?.[1])).toContain('attempt 4');
    expect(lane.pending()).toEqual([]);
    expect(lane.stats()).toMatchObject({ retried: 3, givenUp: 1 });
  });

  it('late arrivals cancel what they filled: a waiting retry, an in-flight request (aborted), part of a range', async () => {
    vi.useFakeTimers();
    const asked: GapRange[] = [];
    const aborted: GapRange[] = [];
    let fail = true;
    const lane = createCompensator({
      random: () => 0.5,
      request: (r, signal) => {
        asked.push(r);
        signal.addEventListener('abort', () => aborted.push(r));
        if (fail) return Promise.reject(new Error('source busy'));
        return new Promise(() => {}); // never answers: only an abort ends it
      },
    });
    lane.add({ from: 10, to: 14 });
    await flush();
    expect(asked).toEqual([{ from: 10, to: 14 }]);
    lane.fill(12); // while a retry waits: the retry asks only for what is still missing
    fail = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(asked.slice(1)).toEqual([
      { from: 10, to: 11 },
      { from: 13, to: 14 },
    ]);
    lane.fill(13);
    lane.fill(14); // the second in-flight request is fully filled: aborted
    expect(aborted).toEqual([{ from: 13, to: 14 }]);
    expect(lane.pending()).toEqual([{ from: 10, to: 11 }]);
    lane.fill(10);
    lane.fill(11);
    await lane.idle();
    expect(lane.stats()).toMatchObject({ cancelled: 2, givenUp: 0 });
  });

  it('a filled gap is never requested, and close() aborts and refuses more work', async () => {
    const asked: GapRange[] = [];
    const lane = createCompensator({ request: async (r) => void asked.push(r) });
    lane.add({ from: 5, to: 5 });
    lane.fill(5);
    await lane.idle();
    expect(asked).toEqual([]);
    lane.close();
    expect(() => lane.add({ from: 1, to: 1 })).toThrow(/closed/);
    expect(() => createCompensator({ request: async () => {}, concurrency: 0 })).toThrow(/concurrency/);
    expect(() => lane.fill(Number.NaN)).toThrow(/seq/);
  });
  it('reports every given-up range even when onGiveUp throws, then surfaces the error', async () => {
    // The hook's error is not swallowed: it surfaces as an unhandled rejection, caught here in
    // place of the runner's own handlers (restored after).
    const runner = process.listeners('unhandledRejection');
    process.removeAllListeners('unhandledRejection');
    const surfaced: unknown[] = [];
    process.on('unhandledRejection', (e) => surfaced.push(e));
    try {
      const given: GapRange[] = [];
      let fail: () => void = () => {};
      const lane = createCompensator({
        retries: 0,
        request: () => new Promise<void>((_, reject) => (fail = () => reject(new Error('source down')))),
        onGiveUp: (range) => {
          given.push(range);
          throw new Error(`alert hook failed for ${range.from}`);
        },
      });
      lane.add({ from: 1, to: 5 });
      await new Promise((r) => setImmediate(r));
      lane.fill(3); // a late arrival while [1, 5] is in flight: two ranges are given up
      fail();
      await lane.idle();
      await new Promise((r) => setTimeout(r, 10));
      expect(given).toEqual([
        { from: 1, to: 2 },
        { from: 4, to: 5 },
      ]);
      expect(lane.stats().givenUp).toBe(2);
      expect(surfaced).toHaveLength(1);
      expect(surfaced[0]).toBeInstanceOf(AggregateError);
      expect((surfaced[0] as AggregateError).errors.map((e: Error) => e.message)).toEqual([
        'alert hook failed for 1',
        'alert hook failed for 4',
      ]);
    } finally {
      process.removeAllListeners('unhandledRejection');
      for (const listener of runner) process.on('unhandledRejection', listener);
    }
  });
});

describe('createCompensator: the compensation lane has lower priority than normal work', () => {
  it('with yieldTo the consumer drained: deliveries waiting when a gap is due go first, however slow their effects', async () => {
    const log: string[] = [];
    let reorderer: Reorderer<string> | undefined;
    const lane = createCompensator({
      request: async (r) => void log.push(`request ${r.from}-${r.to}`),
      yieldTo: () => reorderer?.drained(),
    });
    reorderer = await createReorderer<string>({
      next: 1,
      capacity: 64,
      gapTimeout: '20ms',
      // A slow effect: each delivery waits for I/O (a timer here), as a database write does.
      onRelease: async (x) => {
        await new Promise((r) => setTimeout(r, 5));
        log.push(`delivered ${x.seq}`);
      },
      onGap: (gap) => lane.add(gap),
    });
    for (const seq of [1, 2, 3, 4, 5, 7, 8, 9, 10]) reorderer.push(seq, `e${seq}`);
    // The hole at 6 times out: 7..10 are released behind 1..5, the gap goes to the lane.
    for (let i = 0; i < 2000 && !log.some((l) => l.startsWith('request')); i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    await lane.idle();
    await reorderer.close();
    // Every delivery waiting when the gap fell due went first: the request comes after all of them.
    expect(log).toEqual([...[1, 2, 3, 4, 5, 7, 8, 9, 10].map((seq) => `delivered ${seq}`), 'request 6-6']);
  });

  it('normal work that comes while a request waits its turn goes first too; a rejecting yieldTo still lets it start', async () => {
    const log: string[] = [];
    let done: () => void = () => {};
    let turns = 0;
    const lane = createCompensator({
      concurrency: 1,
      request: async (r) => void log.push(`request ${r.from}`),
      yieldTo: () => {
        turns++;
        // The first turn: the normal lane is busy until `done`; the second: it failed (rejects).
        return turns === 1
          ? new Promise<void>((resolve) => (done = resolve))
          : Promise.reject(new Error('effect failed'));
      },
    });
    lane.add([
      { from: 1, to: 1 },
      { from: 3, to: 3 },
    ]);
    await new Promise((r) => setImmediate(r));
    log.push('delivery');
    expect(lane.stats()).toMatchObject({ inFlight: 0, queued: 2 });
    done();
    await lane.idle();
    expect(log).toEqual(['delivery', 'request 1', 'request 3']);
    expect(turns).toBe(2);
  });

  it('a range filled while its request waited for the normal lane is never requested', async () => {
    const asked: GapRange[] = [];
    let done: () => void = () => {};
    const lane = createCompensator({
      request: async (r) => void asked.push(r),
      yieldTo: () => new Promise<void>((resolve) => (done = resolve)),
    });
    lane.add({ from: 4, to: 4 });
    await new Promise((r) => setImmediate(r));
    lane.fill(4); // the late arrival came while the request waited its turn
    done();
    await lane.idle();
    expect(asked).toEqual([]);
    expect(lane.stats()).toMatchObject({ requested: 0, cancelled: 1, queued: 0, inFlight: 0 });
  });

  it('without yieldTo, work already queued when a gap comes (its continuations too) runs before the request starts', async () => {
    const log: string[] = [];
    const lane = createCompensator({ request: async (r) => void log.push(`request ${r.from}`) });
    // Live deliveries' continuations, queued before and after the gap: the request starts after
    // all of them, from a macrotask (a microtask would start it between them).
    void Promise.resolve().then(() => log.push('delivery 1'));
    lane.add({ from: 5, to: 5 });
    void Promise.resolve()
      .then(() => log.push('delivery 2'))
      .then(() => log.push('delivery 2 effect'));
    await lane.idle();
    expect(log).toEqual(['delivery 1', 'delivery 2', 'delivery 2 effect', 'request 5']);
  });

  it('refuses a yieldTo that is not a function', () => {
    expect(() => createCompensator({ request: async () => {}, yieldTo: 5 as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', message: expect.stringContaining('yieldTo') }),
    );
  });
});
