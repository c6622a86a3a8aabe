import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseDuration } from './duration.js';
import { isOnceflowError } from './errors.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['3s', 3_000],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1.5s', 1_500],
    ['0.1s', 100], // 0.1 * 1000 is 100.00000000000001 in floating point
    ['0.001s', 1],
    ['2.5m', 150_000],
    ['1.0ms', 1],
    ['0s', 0],
    [1500, 1_500],
    [0, 0],
    [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  ] as const)('reads %j as %d ms', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it('gives a plain 0 for -0', () => {
    expect(parseDuration(-0)).toBe(0);
    expect(Object.is(parseDuration(-0), 0)).toBe(true);
  });

  it('is exact for every integer count of every unit', () => {
    const units = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
    fc.assert(
      fc.property(
        fc.nat({ max: 1_000_000 }),
        fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[])),
        (n, unit) => {
          expect(parseDuration(`${n}${unit}`)).toBe(n * units[unit]);
        },
      ),
    );
  });

  it('accepts a fraction exactly when it lands on a whole millisecond', () => {
    fc.assert(
      fc.property(fc.nat({ max: 10_000_000 }), fc.integer({ min: 1, max: 6 }), (digits, places) => {
        const text = String(digits).padStart(places + 1, '0');
        const literal = `${text.slice(0, -places)}.${text.slice(-places)}s`;
        // digits / 10^places seconds = digits * 1000 / 10^places ms: whole iff 10^places divides digits * 1000.
        const whole = (BigInt(digits) * 1000n) % 10n ** BigInt(places) === 0n;
        if (whole)
          expect(parseDuration(literal)).toBe(Number((BigInt(digits) * 1000n) / 10n ** BigInt(places)));
        else expect(() => parseDuration(literal)).toThrow(/whole number of milliseconds/);
      }),
    );
  });

  it.each([
    '0.5ms',
    '1.0000000001s', // a tolerance on a float product would read this as 1000
    '0.0000000001ms', // ... and this as 0
    '-1s',
    '1x',
    '',
    's',
    '1',
    '1.s',
    '.5s',
    '1e3ms',
    '1 s 2',
    '5 s', // whitespace anywhere: the Duration type has none
    '  5s',
    '5s\n',
    '\u00a05s',
    '\ufeff5s',
    '5\tms',
    '3S',
    '1sec',
    '99999999999999999d',
    Number.NaN,
    1.5,
    -1,
    Number.POSITIVE_INFINITY,
    2 ** 53,
    null,
    undefined,
    {},
    10n,
  ])('rejects %s with ERR_INVALID_DURATION naming the option', (input) => {
    let err: unknown;
    try {
      parseDuration(input as never, 'gapTimeout');
    } catch (e) {
      err = e;
    }
    expect(isOnceflowError(err, 'ERR_INVALID_DURATION')).toBe(true);
    expect((err as Error).message).toMatch(/^Expected `gapTimeout` to be a duration like '250ms', '3s'/);
    expect((err as { option: string }).option).toBe('gapTimeout');
  });

  it('says why in the message', () => {
    expect(() => parseDuration(-1, 't')).toThrow(/must not be negative.*got `-1` \(number\)$/);
    expect(() => parseDuration(1.5, 't')).toThrow(/whole count of milliseconds/);
    expect(() => parseDuration('0.5ms', 't')).toThrow(
      /whole number of milliseconds.*got `"0.5ms"` \(string\)$/,
    );
    expect(() => parseDuration('99999999999999999d', 't')).toThrow(/too large/);
    expect(() => parseDuration('1x', 't')).toThrow(/one number followed by one of ms, s, m, h, d/);
  });

  it("names the option 'duration' when none is given", () => {
    expect(() => parseDuration('1x')).toThrow(/^Expected `duration` to be/);
  });
});
