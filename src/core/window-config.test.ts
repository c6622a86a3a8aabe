import { describe, expect, it } from 'vitest';
import { isOnceflowError } from './errors.js';
import { isWindowConfig, window } from './window-config.js';

describe('window()', () => {
  it('builds length, slide and granularity in ms, immutably', () => {
    const base = window('3s');
    expect(base.toJSON()).toEqual({ length: 3000, slide: 3000, granularity: 3000 });
    const w = base.slide('1s').granularity('500ms');
    expect(w.toJSON()).toEqual({ length: 3000, slide: 1000, granularity: 500 });
    expect(w.buckets).toBe(6);
    expect(base.slideMs).toBe(3000);
    expect(isWindowConfig(w)).toBe(true);
    expect(isWindowConfig({ lengthMs: 1 })).toBe(false);
    expect(w.bucketStart(1234)).toBe(1000);
    expect(w.bucketStart(-1)).toBe(-500);
  });

  it('the granularity follows the slide until set', () => {
    expect(window('1m').slide('10s').toJSON()).toEqual({
      length: 60_000,
      slide: 10_000,
      granularity: 10_000,
    });
    expect(window('1m').granularity('5s').slide('10s').granularityMs).toBe(5000);
  });

  it('the order of slide() and granularity() does not matter; an implicit granularity divides both', () => {
    const a = window('3s').slide('2s').granularity('1s');
    const b = window('3s').granularity('1s').slide('2s');
    expect(a.toJSON()).toEqual(b.toJSON());
    expect(a.toJSON()).toEqual({ length: 3000, slide: 2000, granularity: 1000 });
    // Without granularity(): the largest bucket dividing the window and the slide.
    expect(window('3s').slide('2s').toJSON()).toEqual({ length: 3000, slide: 2000, granularity: 1000 });
    expect(window('1m').slide('10s').granularity).toBeTypeOf('function');
    expect(window('1m').slide('10s').buckets).toBe(6);
  });

  it('gives clear, coded errors', () => {
    const cases: [() => unknown, RegExp][] = [
      [() => window('0s'), /`window` to be a positive duration/],
      [() => window('3 seconds' as never), /ERR_INVALID_DURATION|`window`/],
      [
        () => window('3s').slide('4s'),
        /`slide` to be a positive duration no longer than the window \(3000 ms\)/,
      ],
      [
        () => window('3s').granularity('700ms'),
        /`granularity` to be a positive duration that divides the window \(3000 ms\) and the slide \(3000 ms\)/,
      ],
      [() => window('3s').slide('1s').granularity('400ms'), /`granularity`/],
    ];
    for (const [fn, message] of cases) {
      let caught: unknown;
      try {
        fn();
      } catch (err) {
        caught = err;
      }
      expect(isOnceflowError(caught)).toBe(true);
      expect(String(caught)).toMatch(message);
    }
  });
});
