import { describe, expect, it } from 'vitest';
import { ReorderBuffer } from '../windows/reorder-buffer.js';
import { pinnedShapes, pinShapes } from './pin-shapes.js';

describe('pinShapes', () => {
  it('keeps the objects on the owner, appending on a second call, invisible to enumeration', () => {
    class Owner {}
    const a = { x: 1 };
    const b = [1, 2];
    pinShapes(Owner, () => [a]);
    pinShapes(Owner, () => [b]);
    expect(pinnedShapes(Owner)).toEqual([a, b]);
    expect(pinnedShapes(Owner)[0]).toBe(a);
    expect(Object.keys(Owner)).toEqual([]);
    expect(pinnedShapes(class Other {})).toEqual([]);
  });

  it('the reorder buffer pins a buffer and a result of each push path', () => {
    const kept = pinnedShapes(ReorderBuffer);
    expect(kept[0]).toBeInstanceOf(ReorderBuffer);
    const outcomes = kept.filter(Array.isArray).map((r) => (r as unknown as { outcome: string }).outcome);
    expect(outcomes).toEqual(expect.arrayContaining(['released', 'buffered']));
  });
});
