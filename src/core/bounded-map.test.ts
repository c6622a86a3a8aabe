import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedMap } from './bounded-map.js';
import { InvalidOptionError } from './errors.js';

type Op = { kind: 'set'; key: number; value: number } | { kind: 'get' | 'delete'; key: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key: fc.nat(40), value: fc.nat() }),
  fc.record({ kind: fc.constantFrom('get' as const, 'delete' as const), key: fc.nat(40) }),
);

describe('BoundedMap', () => {
  it('against a Map: never holds more than max, never answers a wrong value, keeps what was used in the last max/2 calls', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.array(op, { maxLength: 300 }), (max, ops) => {
        const map = new BoundedMap<number, number>(max);
        const model = new Map<number, number>(); // every value ever set and not deleted
        const touched = new Map<number, number>(); // key -> the call that last set or found it
        ops.forEach((o, call) => {
          if (o.kind === 'set') {
            map.set(o.key, o.value);
            model.set(o.key, o.value);
            touched.set(o.key, call);
          } else if (o.kind === 'get') {
            const got = map.get(o.key);
            // Forgetting is allowed; a value that was never the key's latest is not.
            if (got !== undefined) {
              expect(got).toBe(model.get(o.key));
              touched.set(o.key, call);
            }
          } else {
            map.delete(o.key);
            model.delete(o.key);
            touched.delete(o.key);
            expect(map.has(o.key)).toBe(false);
          }
          expect(map.size).toBeLessThanOrEqual(max);
          for (const [key, at] of touched) {
            if (call - at <= Math.floor(max / 2) - 1) expect(map.has(key)).toBe(true);
          }
        });
      }),
    );
  });

  it('does not count a key held in both generations twice', () => {
    const map = new BoundedMap<string, number>(4);
    map.set('a', 1).set('b', 2); // young reaches 2: becomes the old generation
    map.set('a', 3); // back to young, out of old
    expect(map.size).toBe(2);
    expect(map.get('a')).toBe(3);
    expect(map.delete('a')).toBe(true);
    expect(map.has('a')).toBe(false);
    expect(map.size).toBe(1);
    map.clear();
    expect(map.size).toBe(0);
  });

  it('streams 200,000 unique keys through a bound of 20,000: keeps the newest, forgets the first', () => {
    const map = new BoundedMap<string, number>(20_000);
    for (let i = 0; i < 200_000; i++) map.set(`k${i}`, i);
    expect(map.size).toBeLessThanOrEqual(20_000);
    expect(map.get('k199999')).toBe(199_999);
    expect(map.get('k190000')).toBe(190_000);
    expect(map.get('k0')).toBeUndefined();
  });

  it('refuses a bound below 1 or not whole, naming it', () => {
    for (const bad of [0, -1, 2.5, Number.NaN, '10']) {
      expect(() => new BoundedMap(bad as number)).toThrow(InvalidOptionError);
    }
    expect(() => new BoundedMap(0)).toThrow(/`max`/);
  });
});
