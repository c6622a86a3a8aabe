import { afterEach, describe, expect, it, vi } from 'vitest';
import type { OnceflowEvent } from '../core/observer.js';
import { AdaptiveTimeout } from './adaptive-timeout.js';
import { ReorderBuffer } from './reorder-buffer.js';

const push = (outcome: string, released: number, buffered: number, missing: number) => ({
  part: 'reorder',
  type: 'push',
  outcome,
  released,
  buffered,
  missing,
});

describe('reorder buffer observer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('sees buffered, released, forced advances, late, duplicate and stale, with the fill after each', () => {
    const seen: OnceflowEvent[] = [];
    const b = new ReorderBuffer<string>({
      next: 1,
      capacity: 4,
      gapTimeout: 100,
      maxMissing: 1,
      observer: (e) => seen.push(e),
    });
    b.push(2, 'b', 0); // buffered behind 1
    b.push(1, 'a', 1); // releases 1, 2
    b.push(4, 'd', 2); // buffered behind 3
    b.tick(200); // 3 given up on: a forced advance, 4 released
    b.push(3, 'c', 210); // late
    b.push(3, 'c', 220); // duplicate
    b.push(10, 'j', 230); // overflow: 5..6 given up on, 10 buffered
    b.push(5, 'e', 240); // 5 was forgotten (maxMissing 1 keeps only the newest range): stale
    expect(seen).toEqual([
      push('buffered', 0, 1, 0),
      push('released', 2, 0, 0),
      push('buffered', 0, 1, 0),
      { part: 'reorder', type: 'gap', from: 3, to: 3, cause: 'timeout' },
      push('late', 1, 0, 0),
      push('duplicate', 0, 0, 0),
      { part: 'reorder', type: 'gap', from: 5, to: 6, cause: 'overflow' },
      push('buffered', 0, 1, 1),
      push('stale', 0, 1, 1),
    ]);
  });

  it('sees pushRecovered as a push', () => {
    const seen: OnceflowEvent[] = [];
    const b = new ReorderBuffer<string>({ capacity: 4, gapTimeout: 100, observer: (e) => seen.push(e) });
    b.pushRecovered(0, 'a', 0);
    expect(seen).toEqual([push('released', 1, 0, 0)]);
  });

  it('keeps an unobserved buffer on the class push', () => {
    const b = new ReorderBuffer<string>({ capacity: 4, gapTimeout: 100 });
    expect(Object.hasOwn(b, 'push')).toBe(false);
  });

  it('hands its observer to its adaptive timeout, which reports each new value', () => {
    const seen: OnceflowEvent[] = [];
    const b = new ReorderBuffer<number>({
      capacity: 64,
      gapTimeout: 'adaptive',
      adaptive: { quantile: 0.5, factor: 2, min: 1, max: 1000, initial: 100 },
      observer: (e) => seen.push(e),
    });
    // 16 holes each filled after 20 ms: the adaptive timeout recomputes to 2 x 20.
    let t = 0;
    for (let seq = 0; seq < 32; seq += 2) {
      b.push(seq + 1, seq + 1, t);
      b.push(seq, seq, t + 20);
      t += 100;
    }
    expect(seen.filter((e) => e.part === 'adaptive-timeout')).toEqual([
      { part: 'adaptive-timeout', type: 'timeout', timeoutMs: 40 },
    ]);
  });

  it('keeps working when the observer throws, and reports it once', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const b = new ReorderBuffer<string>({
      next: 1,
      capacity: 4,
      gapTimeout: 100,
      observer: () => {
        throw new Error('observer bug');
      },
    });
    expect(b.push(2, 'b', 0).outcome).toBe('buffered');
    expect(b.push(1, 'a', 1).map((r) => r.item)).toEqual(['a', 'b']);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('refuses an observer that is not a function', () => {
    expect(() => new ReorderBuffer({ capacity: 4, gapTimeout: 100, observer: 'x' as never })).toThrow(
      /`observer`/,
    );
    expect(() => new AdaptiveTimeout({ observer: 1 as never })).toThrow(/`adaptive.observer`/);
  });
});

describe('adaptive timeout observer', () => {
  it('reports a recomputation only when the value changes', () => {
    const seen: OnceflowEvent[] = [];
    const t = new AdaptiveTimeout({
      quantile: 0.5,
      factor: 2,
      min: 1,
      max: 1000,
      initial: 40,
      observer: (e) => seen.push(e),
    });
    for (let i = 0; i < 16; i++) t.record(20); // 40: unchanged
    for (let i = 0; i < 32; i++) t.record(50); // 100
    expect(seen).toEqual([{ part: 'adaptive-timeout', type: 'timeout', timeoutMs: 100 }]);
  });
});
