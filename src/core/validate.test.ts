import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { isOnceflowError } from './errors.js';
import {
  amount,
  isPlainObject,
  knownKeys,
  nonEmptyString,
  nonEmptyStringArg,
  nonNegativeInt,
  optionalOrder,
  orderFromString,
  orderToString,
  positiveInt,
} from './validate.js';

describe('positiveInt', () => {
  it('returns a positive safe integer unchanged', () => {
    expect(positiveInt('capacity', 1)).toBe(1);
    expect(positiveInt('capacity', Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('throws ERR_INVALID_OPTION in the one message format', () => {
    const err = thrown(() => positiveInt('capacity', 0));
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as Error).message).toBe(
      'Expected `capacity` to be a positive safe integer, got `0` (number)',
    );
    expect((err as { option: string }).option).toBe('capacity');
  });

  it.each([
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    2 ** 53,
    '4',
    4n,
    null,
    undefined,
  ])('rejects %s', (value) => {
    expect(() => positiveInt('limit', value)).toThrow(
      /^Expected `limit` to be a positive safe integer, got /,
    );
  });
});

describe('nonNegativeInt', () => {
  it('accepts 0 and rejects negatives and fractions', () => {
    expect(nonNegativeInt('retries', 0)).toBe(0);
    expect(() => nonNegativeInt('retries', -1)).toThrow(
      'Expected `retries` to be a non-negative safe integer, got `-1` (number)',
    );
    expect(() => nonNegativeInt('retries', 0.5)).toThrow(/`retries`/);
    expect(() => nonNegativeInt('retries', '0')).toThrow(/`retries`/);
  });
});

describe('nonEmptyString / nonEmptyStringArg', () => {
  it('accept a non-empty string', () => {
    expect(nonEmptyString('prefix', 'p')).toBe('p');
    expect(nonEmptyStringArg('owner', 'o')).toBe('o');
    expect(nonEmptyStringArg('owner', 'a\ud83d\ude00b')).toBe('a\ud83d\ude00b'); // a surrogate pair
  });

  it('reject a lone surrogate (no UTF-8 form) in an argument', () => {
    for (const bad of ['\ud800', 'x\udc00', '\ude00\ud83d']) {
      const err = thrown(() => nonEmptyStringArg('owner', bad));
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect((err as Error).message).toContain('well-formed Unicode');
    }
  });

  it('reject a lone surrogate in a name or id option too (two names must never meet in a store key)', () => {
    for (const bad of ['x\ud800', 'x\udbff', '\udc00']) {
      const err = thrown(() => nonEmptyString('name', bad));
      expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
      expect((err as Error).message).toContain('well-formed Unicode');
    }
  });

  it('reject empty strings and non-strings with the right code', () => {
    const opt = thrown(() => nonEmptyString('prefix', ''));
    expect(isOnceflowError(opt, 'ERR_INVALID_OPTION')).toBe(true);
    expect((opt as Error).message).toBe(
      'Expected `prefix` to be a non-empty, well-formed Unicode string (no lone surrogate), got `""` (string)',
    );
    const arg = thrown(() => nonEmptyStringArg('owner', 7));
    expect(isOnceflowError(arg, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect((arg as Error).message).toBe(
      'Expected `owner` to be a non-empty, well-formed Unicode string (no lone surrogate), got `7` (number)',
    );
    expect((arg as { path: string }).path).toBe('owner');
  });
});

describe('optionalOrder', () => {
  it('passes undefined, safe integers and bigints through', () => {
    expect(optionalOrder('order', undefined)).toBeUndefined();
    expect(optionalOrder('order', -3)).toBe(-3);
    expect(optionalOrder('order', 2n ** 70n)).toBe(2n ** 70n);
  });

  it.each([1.5, Number.NaN, 2 ** 53, '3', null])('rejects %s with ERR_INVALID_ARGUMENT', (value) => {
    const err = thrown(() => optionalOrder('entry.order', value));
    expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toMatch(/^Expected `entry.order` to be a safe integer or a bigint, got /);
  });
});

describe('amount', () => {
  it('turns safe integers into bigints and keeps bigints', () => {
    expect(amount('deltas.net', -300)).toBe(-300n);
    expect(amount('deltas.net', 2n ** 80n)).toBe(2n ** 80n);
  });

  it.each([0.1, 2 ** 53, '5', Number.NaN])('rejects %s (money is integer minor units)', (value) => {
    expect(() => amount('deltas.net', value)).toThrow(
      /^Expected `deltas.net` to be a bigint or a safe integer/,
    );
  });
});

describe('isPlainObject', () => {
  it('is true for literals and null-prototype objects only', () => {
    expect(isPlainObject({})).toBe(true);
    expect(isPlainObject(Object.create(null))).toBe(true);
    for (const value of [[], new Map(), new Date(), null, 'x', 1, () => {}, new (class A {})()]) {
      expect(isPlainObject(value)).toBe(false);
    }
  });
});

describe('orderToString / orderFromString', () => {
  it('round-trip any order, numbers while they are safe and bigints beyond', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 100n), max: 2n ** 100n }), (big) => {
        const back = orderFromString(orderToString(big));
        const safe = big <= BigInt(Number.MAX_SAFE_INTEGER) && big >= BigInt(Number.MIN_SAFE_INTEGER);
        expect(typeof back).toBe(safe ? 'number' : 'bigint');
        expect(BigInt(back)).toBe(big);
      }),
    );
  });

  it('maps the safe edge exactly', () => {
    expect(orderFromString('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(orderFromString('9007199254740992')).toBe(9007199254740992n);
    expect(orderFromString('-9007199254740992')).toBe(-9007199254740992n);
    expect(orderToString(12)).toBe('12');
  });
});

describe('knownKeys', () => {
  it('passes known keys and refuses a typo with a did-you-mean, naming the nested path', () => {
    expect(() => knownKeys('', { capacity: 4 }, ['capacity', 'store'])).not.toThrow();
    expect(() => knownKeys('', { capcity: 4 }, ['capacity', 'store'])).toThrow(
      'Expected `capcity` to be a known option (did you mean `capacity`?), got `4` (number)',
    );
    expect(() => knownKeys('retry', { tires: 3 }, ['tries', 'delay'])).toThrow(
      /`retry\.tires`.*did you mean `tries`/,
    );
    expect(() => knownKeys('', { zzzzzzzz: 1 }, ['capacity', 'store'])).toThrow(/one of `capacity`, `store`/);
    expect(() => knownKeys('', { ['x'.repeat(100)]: 1 }, ['capacity'])).toThrow(/one of `capacity`/);
  });

  it('names the option that replaced a renamed one, however far apart the spellings', () => {
    const fn = () => {};
    expect(() => knownKeys('', { onEvent: fn }, ['client', 'observer'])).toThrow(/did you mean `observer`\?/);
    // Where the new name is not an option either, the usual hint.
    expect(() => knownKeys('', { onEvent: fn }, ['client', 'store'])).toThrow(/one of `client`, `store`/);
  });

  it("kind 'argument' refuses with ERR_INVALID_ARGUMENT (a call's own object)", () => {
    expect(() => knownKeys('', { ordr: 1 }, ['order', 'owner'], 'argument')).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_ARGUMENT',
        path: 'ordr',
        message: 'Expected `ordr` to be a known field (did you mean `order`?), got `1` (number)',
      }),
    );
  });
});
