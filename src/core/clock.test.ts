import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { FakeClock, systemClock } from './clock.js';
import { isOnceflowError } from './errors.js';

describe('FakeClock', () => {
  it('starts at 0 or at the given time and stands still until told', () => {
    expect(new FakeClock().now()).toBe(0);
    const clock = new FakeClock(1_000);
    expect(clock.now()).toBe(1_000);
    expect(clock.now()).toBe(1_000);
  });

  it('advances by exactly the given amount and returns the new time', () => {
    const clock = new FakeClock(1_000);
    expect(clock.advance(250)).toBe(1_250);
    expect(clock.advance(0)).toBe(1_250);
    expect(clock.now()).toBe(1_250);
  });

  it('never advances backward', () => {
    const clock = new FakeClock(10);
    const err = thrown(() => clock.advance(-1));
    expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toBe('Expected `ms` to be a non-negative number, got `-1` (number)');
    expect(clock.now()).toBe(10);
  });

  it('sets any time, backward included (clock rollback)', () => {
    const clock = new FakeClock(1_000);
    clock.set(400);
    expect(clock.now()).toBe(400);
    clock.set(-5);
    expect(clock.now()).toBe(-5);
  });

  it('rejects times that are not finite numbers', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, '5', null]) {
      expect(() => new FakeClock(bad as number)).toThrow(
        /^Expected `start` to be a finite number of milliseconds/,
      );
      const clock = new FakeClock(3);
      expect(() => clock.advance(bad as number)).toThrow(/^Expected `ms` to be a finite number/);
      expect(() => clock.set(bad as number)).toThrow(/^Expected `ms` to be a finite number/);
      expect(clock.now()).toBe(3);
    }
  });
});

describe('systemClock', () => {
  it('reads the wall clock', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
