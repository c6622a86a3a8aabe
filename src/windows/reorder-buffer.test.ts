import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import { AdaptiveTimeout } from './adaptive-timeout.js';
import { ReorderBuffer } from './reorder-buffer.js';

const seqs = (rs: readonly { seq: number }[]) => rs.map((r) => r.seq);

describe('ReorderBuffer', () => {
  it('overflow "advance" gives the oldest holes up as gaps and releases what was behind them', () => {
    const b = new ReorderBuffer<string>({ capacity: 4, gapTimeout: '1s' });
    b.push(2, 'c', 0);
    const r = b.push(6, 'g', 0); // 6 >= 0 + 4: next must reach 6 - 4 + 1 = 3
    expect(r.outcome).toBe('buffered');
    expect(r.gaps).toEqual([{ from: 0, to: 1 }]);
    expect(seqs(r)).toEqual([2]);
    expect(b.next).toBe(3);
    expect(b.missing()).toEqual([{ from: 0, to: 1 }]);
    // A jump far ahead records one missing range, not a number at a time.
    const far = b.push(1_000_000, 'z', 0);
    expect(far.gaps).toEqual([
      { from: 3, to: 5 },
      { from: 7, to: 999_996 },
    ]);
    expect(seqs(far)).toEqual([6]);
    // The missing set keeps the newest 65 536 numbers (the default bound); older ones answer stale.
    expect(b.stats()).toMatchObject({ next: 999_997, buffered: 1, missing: 65_536 });
    expect(b.missing()).toEqual([{ from: 999_997 - 65_536, to: 999_996 }]);
    expect(b.push(3, 'd', 0).outcome).toBe('stale');
    expect(b.push(999_000, 'y', 0).outcome).toBe('late');
  });

  it('overflow "reject" answers rejected and changes nothing', () => {
    const b = new ReorderBuffer<string>({ capacity: 4, gapTimeout: '1s', overflow: 'reject' });
    b.push(1, 'b', 0);
    expect(b.push(4, 'e', 0).outcome).toBe('rejected');
    expect(b.next).toBe(0);
    expect(b.buffered).toBe(1);
  });

  it('a bounded missing set forgets its oldest numbers one at a time; a forgotten one answers stale', () => {
    const b = new ReorderBuffer<string>({ capacity: 8, gapTimeout: 10, maxMissing: 3 });
    b.push(5, 'f', 0);
    expect(b.tick(10).gaps).toEqual([{ from: 0, to: 4 }]);
    expect(b.missing()).toEqual([{ from: 2, to: 4 }]);
    expect(b.push(1, 'b', 11).outcome).toBe('stale'); // forgotten: may have come before
    expect(b.push(3, 'd', 11).outcome).toBe('late');
    expect(b.push(5, 'f', 11).outcome).toBe('duplicate');
    expect(b.stats()).toMatchObject({ next: 6, buffered: 0, missing: 2 });
  });

  it('the hole age counts from the first item behind it; every overdue hole goes in one tick', () => {
    const clock = new FakeClock(1000);
    const b = new ReorderBuffer<string>({ capacity: 16, gapTimeout: 100, clock });
    b.push(2, 'c'); // hole 0..1 known since 1000
    clock.advance(60);
    b.push(5, 'f'); // hole 3..4 known since 1060
    expect(b.deadline).toBe(1100);
    clock.advance(40);
    expect(b.tick()).toEqual({
      released: [{ seq: 2, item: 'c', late: false }],
      gaps: [{ from: 0, to: 1 }],
    });
    expect(b.deadline).toBe(1160); // the next hole: from the arrival of 5
    clock.advance(60);
    expect(b.tick().gaps).toEqual([{ from: 3, to: 4 }]);
    expect(b.deadline).toBeUndefined();
  });

  it('time never moves back inside a buffer (a clock stepped back does not make a hole younger)', () => {
    const b = new ReorderBuffer<string>({ capacity: 16, gapTimeout: 100 });
    b.push(1, 'b', 500);
    b.push(3, 'd', 400); // read as 500: had it counted as 400, hole 0 would be overdue at 500
    expect(b.tick(599).gaps).toEqual([]);
    expect(b.tick(600).gaps).toEqual([
      { from: 0, to: 0 },
      { from: 2, to: 2 },
    ]);
  });

  it('adaptive: the timeout follows the fill times of holes, clamped, and is exposed for metrics', () => {
    const b = new ReorderBuffer<number>({
      capacity: 64,
      gapTimeout: 'adaptive',
      adaptive: { quantile: 0.9, factor: 2, min: 5, max: 80, initial: 50 },
    });
    expect(b.timeoutMs).toBe(50);
    let t = 0;
    for (let i = 0; i < 32; i += 2) {
      // Each even number arrives 10 ms after the odd one behind it: a hole filled in 10 ms.
      b.push(i + 1, i + 1, t);
      t += 10;
      b.push(i, i, t);
    }
    expect(b.stats().adaptive).toMatchObject({ samples: 16, quantileMs: 10, timeoutMs: 20 });
    expect(b.timeoutMs).toBe(20);
    // Holes that fill late (after being given up) count too, and the clamp holds.
    for (let i = 32; i < 96; i += 2) {
      b.push(i + 1, i + 1, t);
      b.tick((t += 25));
      b.push(i, i, (t += 500));
    }
    expect(b.timeoutMs).toBe(80);
  });

  it('adaptive: items marked recovered (re-requested by a compensator) do not teach the timeout', () => {
    // 0.5% of events lost and re-sent by compensation 20 ms after their gap; 10% swapped with
    // their neighbour, 2 ms apart. Learned from the re-sent ones too, the p99 climbs to `max`.
    const run = (mark: boolean) => {
      const b = new ReorderBuffer<number>({ capacity: 1 << 16, gapTimeout: 'adaptive' });
      let t = 0;
      let seq = 0;
      let due: [number, number][] = [];
      const take = (gaps: readonly { from: number; to: number }[]) => {
        for (const g of gaps) for (let s = g.from; s <= g.to; s++) due.push([s, t + 20]);
      };
      for (let i = 0; i < 30_000; i++) {
        t += 1;
        if (i % 200 === 7) {
          seq++; // lost
          continue;
        }
        if (i % 10 === 3) {
          take(b.push(seq + 1, 0, t).gaps);
          take(b.push(seq, 0, t + 2).gaps);
          seq += 2;
          i++;
          continue;
        }
        take(b.push(seq++, 0, t).gaps);
        take(b.tick(t).gaps);
        const now = due.filter(([, at]) => at <= t);
        due = due.filter(([, at]) => at > t);
        for (const [s] of now) mark ? b.pushRecovered(s, 0, t) : b.push(s, 0, t);
      }
      return b.timeoutMs;
    };
    expect(run(true)).toBeLessThanOrEqual(10); // follows the 2 ms swaps: 2 x p99, clamped at min 10
    expect(run(false)).toBe(5000); // the runaway it prevents
  });

  it('adaptive: a hole behind the head counts from the first arrival above it, on every release path', () => {
    for (const release of ['tick', 'head'] as const) {
      const b = new ReorderBuffer<string>({
        capacity: 64,
        gapTimeout: 'adaptive',
        adaptive: { quantile: 1, factor: 1, min: 1, max: 10_000, initial: 1000 },
      });
      let t = 0;
      let s = 0;
      for (let block = 0; block < 32; block++) {
        // s is missing; s+3, s+2, s+1 arrive 40 ms apart: s+1's hole was open 80 ms.
        b.push(s + 3, 'x', t);
        b.push(s + 2, 'x', t + 40);
        b.push(s + 1, 'x', t + 80);
        t += 80;
        if (release === 'tick')
          b.tick((t += b.timeoutMs)); // s given up: the run goes out by tick
        else b.push(s, 'x', (t += 5)); // s comes: the run goes out behind it (85 ms for s itself)
        s += 4;
        t += 1;
      }
      expect(b.stats().adaptive?.quantileMs).toBe(release === 'tick' ? 80 : 85);
    }
  });

  it('adaptive: a recovered item held above the head teaches nothing when its run goes out', () => {
    const b = new ReorderBuffer<string>({
      capacity: 64,
      gapTimeout: 'adaptive',
      adaptive: { quantile: 1, factor: 1, min: 1, max: 100_000, initial: 1000 },
    });
    let t = 0;
    let s = 0;
    for (let i = 0; i < 32; i++) {
      b.push(s + 2, 'x', t); // from the stream
      b.pushRecovered(s + 1, 'x', t + 700); // re-sent on request: held above the head
      b.pushRecovered(s, 'x', t + 701); // fills the head: the run goes out
      s += 3;
      t += 800;
    }
    expect(b.stats().adaptive?.samples).toBe(0);
    // A fill by the stream afterwards is learned: the recovered pushes left learning on.
    b.push(s + 1, 'x', t);
    b.push(s, 'x', t + 5);
    expect(b.stats().adaptive?.samples).toBe(1);
  });

  it('snapshot is JSON, restore validates it', () => {
    const b = new ReorderBuffer<{ v: number }>({ next: 10, capacity: 8, gapTimeout: 5 });
    b.push(12, { v: 12 }, 1);
    b.push(15, { v: 15 }, 2);
    b.tick(6);
    const saved = JSON.parse(JSON.stringify(b.snapshot()));
    expect(saved).toEqual({
      format: 'onceflow.reorder.v1',
      next: 13,
      buffered: [[15, { v: 15 }, 2]],
      missing: [[10, 11, 1]],
      missingHorizon: null,
      lastNow: 6,
      adaptive: null,
    });
    const small = new ReorderBuffer<{ v: number }>({ capacity: 2, gapTimeout: 5 });
    expect(() => small.restore(saved)).toThrow(/saved.buffered\[0\]\[0\]/);
    expect(() => b.restore({ ...saved, format: 'x' })).toThrow(/format/);
    expect(() => b.restore({ ...saved, missing: [[11, 10, 0]] })).toThrow(/ascending/);
    expect(() => b.restore({ ...saved, adaptive: 'x' })).toThrow(/saved.adaptive/);
  });

  it('restores its own snapshot after releasing the last safe integer (next is then 2^53)', () => {
    const b = new ReorderBuffer<string>({ next: Number.MAX_SAFE_INTEGER - 1, capacity: 4, gapTimeout: '1s' });
    b.push(Number.MAX_SAFE_INTEGER - 1, 'x', 0);
    b.push(Number.MAX_SAFE_INTEGER, 'y', 0);
    const saved = JSON.parse(JSON.stringify(b.snapshot()));
    const restored = new ReorderBuffer<string>({ capacity: 4, gapTimeout: '1s' });
    restored.restore(saved);
    expect(restored.next).toBe(b.next);
    expect(restored.push(Number.MAX_SAFE_INTEGER, 'y', 1).outcome).toBe('duplicate');
    expect(() => restored.restore({ ...saved, next: 2 ** 53 + 2 })).toThrow(/saved.next/);
  });

  it('restores across a change of gap timeout (fixed <-> adaptive): the configured one applies', () => {
    const fixed = new ReorderBuffer<string>({ next: 1, capacity: 8, gapTimeout: 5 });
    fixed.push(3, 'c', 0);
    const adaptive = new ReorderBuffer<string>({ capacity: 8, gapTimeout: 'adaptive' });
    adaptive.restore(fixed.snapshot());
    expect(adaptive.next).toBe(1);
    expect(adaptive.buffered).toBe(1);
    expect(adaptive.timeoutMs).toBe(new ReorderBuffer({ capacity: 8, gapTimeout: 'adaptive' }).timeoutMs);
    adaptive.push(1, 'a', 1);
    const back = new ReorderBuffer<string>({ capacity: 8, gapTimeout: 5 });
    back.restore(adaptive.snapshot());
    expect(back.next).toBe(2);
    expect(back.timeoutMs).toBe(5);
    expect(back.tick(100).gaps).toEqual([{ from: 2, to: 2 }]);
  });

  it('restore replaces the learned adaptive timeout too: a save without a sample starts afresh', () => {
    const trained = new ReorderBuffer<number>({ capacity: 8, gapTimeout: 'adaptive' });
    const fresh = trained.timeoutMs;
    // Holes that take 5 s to fill, many times over: the adaptive timeout follows them up.
    for (let i = 0, t = 0; i < 200; i++, t += 10_000) {
      const s = trained.next;
      trained.push(s + 1, s + 1, t);
      trained.push(s, s, t + 5_000);
    }
    expect(trained.timeoutMs).toBeGreaterThan(fresh);
    trained.restore(new ReorderBuffer<number>({ capacity: 8, gapTimeout: 5 }).snapshot());
    expect(trained.timeoutMs).toBe(fresh);
    expect(trained.snapshot().adaptive).toEqual(
      new ReorderBuffer({ capacity: 8, gapTimeout: 'adaptive' }).snapshot().adaptive,
    );
  });

  it('validates options and arguments with coded errors', () => {
    const caught = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return err;
      }
      return undefined;
    };
    const e = caught(() => new ReorderBuffer({ capacity: 0, gapTimeout: 1 }));
    expect(isOnceflowError(e, 'ERR_INVALID_OPTION')).toBe(true);
    expect(String(e)).toContain('`capacity` to be a positive safe integer, got `0`');
    // Slots are allocated up front: a capacity past 2^24 is a typo, refused before any allocation.
    expect(() => new ReorderBuffer({ capacity: 2 ** 24 + 1, gapTimeout: 1 })).toThrow(
      /`capacity` to be at most 2\^24/,
    );
    expect(() => new ReorderBuffer({ capacity: 4, gapTimeout: '1 sec' as never })).toThrow(/gapTimeout/);
    expect(() => new ReorderBuffer({ capacity: 4, gapTimeout: 1, overflow: 'drop' as never })).toThrow(
      /overflow/,
    );
    expect(() => new ReorderBuffer({ capacity: 4, gapTimeout: 1, adaptive: {} })).toThrow(/adaptive/);
    // With another option wrong too, that one is named: the capacity bound is checked last.
    const huge = 2 ** 24 + 1;
    expect(() => new ReorderBuffer({ capacity: huge, gapTimeout: 1, overflow: 'drop' as never })).toThrow(
      /overflow/,
    );
    expect(() => new ReorderBuffer({ capacity: huge, gapTimeout: 'soon' as never })).toThrow(/gapTimeout/);
    expect(() => new ReorderBuffer({ capacity: huge, gapTimeout: 1, adaptive: {} })).toThrow(/adaptive/);
    expect(
      () => new ReorderBuffer({ capacity: huge, gapTimeout: 'adaptive', adaptive: { quantile: 2 } }),
    ).toThrow(/quantile/);
    const b = new ReorderBuffer({ capacity: 4, gapTimeout: 1 });
    expect(
      isOnceflowError(
        caught(() => b.push(-1, 'x', 0)),
        'ERR_INVALID_ARGUMENT',
      ),
    ).toBe(true);
    expect(() => b.push(1.5, 'x', 0)).toThrow(/seq/);
    expect(() => b.push(1, 'x', Number.NaN)).toThrow(/now/);
    // Inside the window (the fast path): a bad time or number is refused and nothing is held.
    expect(() => b.push(2, 'x', '5' as never)).toThrow(/now/);
    expect(() => b.push(2.5, 'x', 0)).toThrow(/seq/);
    // Not numbers, though `seq - next` would be one (kafkajs hands offsets over as strings).
    for (const seq of ['3', true, [2], { valueOf: () => 2 }])
      expect(() => b.push(seq as never, 'x', 0)).toThrow(/seq/);
    expect(b.buffered).toBe(0);
    // Beyond 2^53 - 1 nothing is accepted, even inside the window (2^53 + 1 === 2^53 there).
    const top = new ReorderBuffer({ next: 2 ** 53 - 2, capacity: 8, gapTimeout: 1 });
    expect(() => top.push(2 ** 53, 'x', 0)).toThrow(/seq/);
    expect(top.push(2 ** 53 - 1, 'b', 0).outcome).toBe('buffered');
    expect(top.push(2 ** 53 - 2, 'a', 0).map((r) => r.item)).toEqual(['a', 'b']);
    b.push(2, 'x', 5);
    expect(() => b.push(2, 'x', Number.NaN)).toThrow(/now/); // checked before the duplicate answer
    expect(b.push(2, 'x', 3).outcome).toBe('duplicate'); // a time behind the latest seen is fine
  });
});

describe('AdaptiveTimeout', () => {
  it('nearest-rank quantile over a sliding sample, times the factor, clamped', () => {
    const t = new AdaptiveTimeout({
      quantile: 0.5,
      factor: 3,
      min: 10,
      max: 100,
      sampleSize: 16,
      initial: 40,
    });
    for (let i = 1; i <= 16; i++) t.record(i); // median 8 → 24
    expect(t.stats()).toMatchObject({ quantileMs: 8, timeoutMs: 24, samples: 16 });
    for (let i = 0; i < 16; i++) t.record(1000); // the old samples slide out
    expect(t.timeoutMs).toBe(100);
    const copy = new AdaptiveTimeout({ quantile: 0.5, factor: 3, min: 10, max: 100, sampleSize: 16 });
    copy.load(JSON.parse(JSON.stringify(t.toJSON())));
    expect(copy.stats()).toEqual(t.stats());
    expect(() => new AdaptiveTimeout({ quantile: 0 })).toThrow(/quantile/);
    expect(() => new AdaptiveTimeout({ factor: 0.5 })).toThrow(/factor/);
    expect(() => new AdaptiveTimeout({ min: 50, max: 10 })).toThrow(/adaptive.max/);
  });
});
