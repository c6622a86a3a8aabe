import { describe, expect, it } from 'vitest';
import { createLedger } from '../ledger/ledger.js';
import { createLimiter } from '../limiter/limiter.js';
import { ReorderBuffer } from '../windows/reorder-buffer.js';
import { SignatureWindow } from '../windows/signature-window.js';
import { pinnedShapes, pinShapes } from './pin-shapes.js';

describe('pinShapes', () => {
  it('runs make once per owner, on the first call, and keeps its objects invisible to enumeration', () => {
    class Owner {}
    const a = { x: 1 };
    let runs = 0;
    const make = () => {
      runs++;
      // make may call pinShapes for its owner again (it makes instances): that returns at once.
      pinShapes(Owner, make);
      return [a];
    };
    pinShapes(Owner, make);
    pinShapes(Owner, () => [[1, 2]]);
    expect(runs).toBe(1);
    expect(pinnedShapes(Owner)).toEqual([a]);
    expect(pinnedShapes(Owner)[0]).toBe(a);
    expect(Object.keys(Owner)).toEqual([]);
    expect(pinnedShapes(class Other {})).toEqual([]);
  });

  it('a make that throws keeps nothing and throws nothing', () => {
    class Owner {}
    pinShapes(Owner, () => {
      throw new Error('mocked clock');
    });
    expect(pinnedShapes(Owner)).toEqual([]);
  });

  it('the reorder buffer pins a buffer and a result of each push path, once one is made', () => {
    new ReorderBuffer({ capacity: 4, gapTimeout: 0 });
    const kept = pinnedShapes(ReorderBuffer);
    expect(kept[0]).toBeInstanceOf(ReorderBuffer);
    const outcomes = kept.filter(Array.isArray).map((r) => (r as unknown as { outcome: string }).outcome);
    expect(outcomes).toEqual(expect.arrayContaining(['released', 'buffered']));
  });

  it('limiters, ledgers and windows pin an instance of their class', () => {
    const limiter = createLimiter({ algorithm: 'gcra', limit: 1, window: 1000 });
    const algorithms = pinnedShapes(limiter.constructor)
      .filter((k) => k instanceof (limiter.constructor as new () => object))
      .map((k) => (k as typeof limiter).limits[0]?.algorithm);
    expect(new Set(algorithms)).toEqual(new Set(['gcra', 'fixed-window', 'sliding-window', 'sliding-log']));
    const ledger = createLedger({ capacity: 4 });
    expect(pinnedShapes(ledger.constructor)[0]).toBeInstanceOf(ledger.constructor);
    new SignatureWindow({ capacity: 2 });
    expect(pinnedShapes(SignatureWindow)[0]).toBeInstanceOf(SignatureWindow);
  });
});
