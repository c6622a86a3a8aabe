import { describe, expect, it } from 'vitest';
import { LookupWindow } from './lookup-window.js';

describe('LookupWindow', () => {
  it('counts answers, nulls, calls and slow calls (strictly above the threshold)', () => {
    const w = new LookupWindow(1_000, 100);
    w.answer(0, true);
    w.answer(0, false);
    w.backend(0, 100);
    w.backend(0, 101);
    expect(w.totals(0)).toEqual({ answers: 2, nulls: 1, calls: 2, slow: 1 });
  });

  it('a slot leaves the window one window after it began: exact to one slot (window/10)', () => {
    const w = new LookupWindow(1_000, 100);
    w.answer(0, true); // slot [0, 100)
    w.answer(950, true); // slot [900, 1000)
    expect(w.totals(999).answers).toBe(2);
    expect(w.totals(1_000).answers).toBe(1); // slot [0, 100) left
    expect(w.totals(1_899).answers).toBe(1);
    expect(w.totals(1_900).answers).toBe(0);
  });

  it('a jump longer than the window clears every slot, once', () => {
    const w = new LookupWindow(1_000, 100);
    for (let t = 0; t < 1_000; t += 50) w.answer(t, true);
    expect(w.totals(999).answers).toBe(20);
    expect(w.totals(10_000)).toEqual({ answers: 0, nulls: 0, calls: 0, slow: 0 });
    w.answer(10_000, false);
    expect(w.totals(10_000)).toEqual({ answers: 1, nulls: 0, calls: 0, slow: 0 });
  });

  it('a clock that steps back records into the newest slot and loses nothing', () => {
    const w = new LookupWindow(1_000, 100);
    w.answer(5_000, true);
    w.answer(4_000, true);
    expect(w.totals(5_000).answers).toBe(2);
    expect(w.totals(5_999).answers).toBe(2);
    expect(w.totals(6_000).answers).toBe(0);
  });

  it('clear forgets every count', () => {
    const w = new LookupWindow(1_000, 100);
    w.answer(0, true);
    w.backend(0, 500);
    w.clear();
    expect(w.totals(0)).toEqual({ answers: 0, nulls: 0, calls: 0, slow: 0 });
  });
});
