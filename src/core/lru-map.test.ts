import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from './errors.js';
import { LruMap } from './lru-map.js';

type Op =
  | { kind: 'set'; key: number; value: number }
  | { kind: 'get' | 'peek' | 'delete'; key: number }
  | { kind: 'clear' };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('set' as const), key: fc.nat(20), value: fc.nat() }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constantFrom('get' as const, 'peek' as const, 'delete' as const),
      key: fc.nat(20),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
);

describe('LruMap', () => {
  it('answers as an exact LRU list (oldest first) after any sequence of calls', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(op, { maxLength: 200 }), (max, ops) => {
        const map = new LruMap<number, number>(max);
        let model: [number, number][] = []; // least recently used first
        for (const o of ops) {
          const at = o.kind === 'clear' ? -1 : model.findIndex(([k]) => k === o.key);
          if (o.kind === 'set') {
            if (at >= 0) model.splice(at, 1);
            else if (model.length >= max) model.shift();
            model.push([o.key, o.value]);
            expect(map.set(o.key, o.value)).toBe(map);
          } else if (o.kind === 'get') {
            const entry = at >= 0 ? model.splice(at, 1)[0] : undefined;
            if (entry) model.push(entry);
            expect(map.get(o.key)).toBe(entry?.[1]);
          } else if (o.kind === 'peek') {
            expect(map.peek(o.key)).toBe(at >= 0 ? model[at]?.[1] : undefined);
          } else if (o.kind === 'delete') {
            if (at >= 0) model.splice(at, 1);
            expect(map.delete(o.key)).toBe(at >= 0);
          } else {
            model = [];
            map.clear();
          }
          expect([...map.keys()]).toEqual(model.map(([k]) => k));
          expect(map.size).toBe(model.length);
        }
      }),
    );
  });

  it('refuses a bound below 1 or not whole, naming it', () => {
    for (const bad of [0, -1, 2.5, Number.NaN, '10']) {
      expect(() => new LruMap(bad as number)).toThrow(InvalidOptionError);
    }
    expect(() => new LruMap(0)).toThrow(/`max`/);
  });
});
