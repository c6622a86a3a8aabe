import { describe, expect, it } from 'vitest';
import { isClean, Tally } from './gateway-tally.js';

describe('Tally', () => {
  it('counts each message once, lost, doubled or out of order, per client', () => {
    const tally = new Tally(2);
    for (const n of [1, 2, 4, 3, 4, 6]) tally.arrived(0, n); // 5 lost, 4 doubled, 3 late
    for (const n of [1, 2, 3]) tally.arrived(1, n);
    expect(tally.count(0)).toBe(6);
    const counts = tally.counts([6, 3]);
    expect(counts).toEqual({ sent: 9, once: 7, lost: 1, doubled: 1, outOfOrder: 1 });
    expect(isClean(counts)).toBe(false);
  });

  it('a repeat of an earlier message is doubled, not also out of order', () => {
    const tally = new Tally(1);
    for (const n of [1, 2, 1]) tally.arrived(0, n);
    expect(tally.counts([2])).toEqual({ sent: 2, once: 1, lost: 0, doubled: 1, outOfOrder: 0 });
  });

  it('everything once and in order is clean; nothing arrived is all lost', () => {
    const tally = new Tally(2);
    for (const n of [1, 2, 3]) tally.arrived(0, n);
    expect(isClean(tally.counts([3, 0]))).toBe(true);
    expect(tally.counts([3, 2])).toMatchObject({ lost: 2, once: 3 });
  });
});
