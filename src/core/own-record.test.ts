import { describe, expect, it } from 'vitest';
import { ownRecord, setOwn } from './own-record.js';

describe('ownRecord', () => {
  it('makes own data properties from a Map or an array of pairs, in order', () => {
    expect(
      ownRecord(
        new Map([
          ['coins', 5n],
          ['gems', -2n],
        ]),
      ),
    ).toEqual({ coins: 5n, gems: -2n });
    expect(
      Object.keys(
        ownRecord([
          ['b', 1],
          ['a', 2],
        ]),
      ),
    ).toEqual(['b', 'a']);
    expect(Object.getPrototypeOf(ownRecord([]))).toBe(Object.prototype);
  });

  it('keeps `__proto__` and prototype names as own fields, never as the prototype', () => {
    const r = ownRecord([
      ['__proto__', 1n],
      ['constructor', 2n],
      ['toString', 3n],
    ]);
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(Object.getOwnPropertyNames(r)).toEqual(['__proto__', 'constructor', 'toString']);
    expect(Object.getOwnPropertyDescriptor(r, '__proto__')).toEqual({
      value: 1n,
      enumerable: true,
      writable: true,
      configurable: true,
    });
    expect(Object.getOwnPropertyDescriptor(r, 'toString')?.value).toBe(3n);
  });

  it('defines a name a frozen Object.prototype holds read-only (an assignment would throw)', () => {
    const descriptor = Object.getOwnPropertyDescriptor(Object.prototype, 'valueOf') as PropertyDescriptor;
    Object.defineProperty(Object.prototype, 'valueOf', { ...descriptor, writable: false });
    try {
      const out: Record<string, bigint> = {};
      const name: string = 'valueOf';
      expect(() => {
        out[name] = 1n; // modules are strict: the override mistake throws
      }).toThrow(TypeError);
      setOwn(out, 'valueOf', 7n);
      expect(Object.getOwnPropertyDescriptor(out, 'valueOf')?.value).toBe(7n);
    } finally {
      Object.defineProperty(Object.prototype, 'valueOf', descriptor);
    }
  });
});
