import { describe, expect, it } from 'vitest';
import { MissingSet } from './missing-set.js';

describe('MissingSet', () => {
  it('takes a number out of the middle of a range, splitting it, and answers when its hole opened', () => {
    const set = new MissingSet(100);
    set.add(3, 7, 10);
    set.add(9, 9, 20);
    expect(set.take(5)).toBe(10);
    expect(set.ranges()).toEqual([
      { from: 3, to: 4 },
      { from: 6, to: 7 },
      { from: 9, to: 9 },
    ]);
    expect(set.take(9)).toBe(20);
    expect(set.take(3)).toBe(10);
    expect(set.take(7)).toBe(10);
    expect(set.ranges()).toEqual([
      { from: 4, to: 4 },
      { from: 6, to: 6 },
    ]);
    expect(set.count).toBe(2);
  });

  it('answers undefined for a number that is not missing, and changes nothing', () => {
    const set = new MissingSet(100);
    set.add(3, 4, 0);
    expect(set.take(2)).toBeUndefined();
    expect(set.take(5)).toBeUndefined();
    set.take(3);
    expect(set.take(3)).toBeUndefined();
    expect(set.toJSON()).toEqual([[4, 4, 0]]);
  });

  it('forgets the oldest numbers one at a time past its bound and raises the horizon over them', () => {
    const set = new MissingSet(3);
    set.add(1, 2, 0);
    expect(set.horizon).toBeUndefined();
    set.add(5, 6, 1);
    expect(set.count).toBe(3);
    expect(set.horizon).toBe(1);
    expect(set.ranges()).toEqual([
      { from: 2, to: 2 },
      { from: 5, to: 6 },
    ]);
    set.add(8, 9, 2);
    expect(set.horizon).toBe(5);
    expect(set.ranges()).toEqual([
      { from: 6, to: 6 },
      { from: 8, to: 9 },
    ]);
    expect(set.take(1)).toBeUndefined();
  });

  it('loads a snapshot and counts each range exactly, even past 2^53 in total', () => {
    const set = new MissingSet(Number.MAX_SAFE_INTEGER);
    set.load(
      [
        [0, 2 ** 52, 0],
        [2 ** 52 + 2, 2 ** 53 - 2, 1],
      ],
      undefined,
    );
    expect(set.count).toBe(2 ** 53 - 2);
    expect(set.take(2 ** 52 + 1)).toBeUndefined();
    expect(set.take(2 ** 53 - 2)).toBe(1);
  });
});
