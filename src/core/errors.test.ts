import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ClosedError,
  describe as describeValue,
  ErrorCode,
  InvalidArgumentError,
  InvalidDurationError,
  InvalidOptionError,
  isOnceflowError,
  OnceflowError,
  StoreError,
} from './errors.js';

describe('OnceflowError family', () => {
  it('formats an invalid option as "Expected `option` to be ..., got `value` (type)"', () => {
    const err = new InvalidOptionError('capacity', 'a positive safe integer', 0);
    expect(err.message).toBe('Expected `capacity` to be a positive safe integer, got `0` (number)');
    expect(err.code).toBe('ERR_INVALID_OPTION');
    expect(err.option).toBe('capacity');
  });

  it('carries a literal name, shared by every subclass, as an own property', () => {
    const errors = [
      new OnceflowError(ErrorCode.STORE, 'x'),
      new InvalidOptionError('o', 'e', 1),
      new InvalidArgumentError('p', 'e', 1),
      new InvalidDurationError('d', 'x', 'why'),
      new StoreError('op', new Error('boom')),
      new ClosedError('ledger'),
    ];
    for (const err of errors) {
      expect(err.name).toBe('OnceflowError');
      expect(Object.hasOwn(err, 'name')).toBe(true);
      expect(err).toBeInstanceOf(OnceflowError);
      expect(err).toBeInstanceOf(Error);
    }
  });

  it('renders toString() like Node errors: `OnceflowError [CODE]: message`', () => {
    const err = new InvalidOptionError('capacity', 'a positive safe integer', 0);
    expect(err.toString()).toBe(
      'OnceflowError [ERR_INVALID_OPTION]: Expected `capacity` to be a positive safe integer, got `0` (number)',
    );
    expect(String(new ClosedError('ledger'))).toBe('OnceflowError [ERR_CLOSED]: ledger is closed');
  });

  it('puts the name in the first line of the stack, so logs show the family', () => {
    expect(new ClosedError('x').stack?.split('\n')[0]).toBe('OnceflowError: x is closed');
  });

  it('names the argument path in an invalid argument', () => {
    const err = new InvalidArgumentError('payload.round', 'an int', 1.5);
    expect(err.message).toBe('Expected `payload.round` to be an int, got `1.5` (number)');
    expect(err.code).toBe('ERR_INVALID_ARGUMENT');
    expect(err.path).toBe('payload.round');
  });

  it('names the option and the reason in an invalid duration', () => {
    const err = new InvalidDurationError('gapTimeout', '1x', 'one number and one unit');
    expect(err.code).toBe('ERR_INVALID_DURATION');
    expect(err.option).toBe('gapTimeout');
    expect(err.message).toMatch(/^Expected `gapTimeout` to be a duration like /);
    expect(err.message).toContain('(one number and one unit)');
    expect(err.message).toMatch(/got `"1x"` \(string\)$/);
  });

  it('keeps the driver error in `cause` and its message in the message', () => {
    const driver = new Error('ECONNRESET');
    const err = new StoreError('ledger.apply', driver);
    expect(err.cause).toBe(driver);
    expect(err.code).toBe('ERR_STORE');
    expect(err.message).toBe('Store operation `ledger.apply` failed: ECONNRESET');
    expect(new StoreError('take', 'NOSCRIPT').message).toBe('Store operation `take` failed: NOSCRIPT');
    expect(new StoreError('take', 'NOSCRIPT').cause).toBe('NOSCRIPT');
  });

  it('sets `cause` only when one is given', () => {
    expect('cause' in new OnceflowError(ErrorCode.STORE, 'x')).toBe(false);
    expect('cause' in new OnceflowError(ErrorCode.STORE, 'x', {})).toBe(false);
    const cause = { reason: 1 };
    expect(new OnceflowError(ErrorCode.STORE, 'x', { cause }).cause).toBe(cause);
  });

  it('has one code table: distinct `ERR_` codes', () => {
    const codes = Object.values(ErrorCode);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^ERR_[A-Z_]+$/);
    expect(new ClosedError('x').code).toBe(ErrorCode.CLOSED);
  });
});

describe('describe (value rendering in messages)', () => {
  it.each([
    [0, '`0` (number)'],
    [-1.5, '`-1.5` (number)'],
    [Number.NaN, '`NaN` (number)'],
    ['a', '`"a"` (string)'],
    ['', '`""` (string)'],
    [5n, '`5n` (bigint)'],
    [true, '`true` (boolean)'],
    [null, '`null`'],
    [undefined, '`undefined`'],
    [[1, 2], '`[1,2]` (array)'],
    [{ a: 1n }, '`{"a":"1n"}` (object)'],
    [Symbol('s'), '`Symbol(s)` (symbol)'],
  ])('renders %s as %s', (value, text) => {
    expect(describeValue(value)).toBe(text);
  });

  it('renders functions by name', () => {
    function named() {}
    expect(describeValue(named)).toBe('`[function named]` (function)');
  });

  it('survives values JSON cannot write', () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(describeValue(circular)).toBe('`[object Object]` (object)');
  });

  it('cuts long renderings to 80 characters so one payload cannot flood a log', () => {
    expect(describeValue('x'.repeat(200))).toBe(`\`"${'x'.repeat(76)}...\` (string)`);
    expect(describeValue({ big: 'y'.repeat(200) })).toHaveLength('`` (object)'.length + 80);
    fc.assert(
      fc.property(fc.string({ minLength: 0, maxLength: 500 }), (s) => {
        const text = describeValue(s);
        const inner = text.slice(1, text.indexOf('` (string)'));
        expect(inner.length).toBeLessThanOrEqual(80);
        if (JSON.stringify(s).length > 80) expect(inner.endsWith('...')).toBe(true);
        else expect(inner).toBe(JSON.stringify(s));
      }),
    );
  });
});

describe('isOnceflowError', () => {
  it('recognises real errors, by code when one is given', () => {
    const err = new InvalidOptionError('capacity', 'x', 0);
    expect(isOnceflowError(err)).toBe(true);
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect(isOnceflowError(err, 'ERR_STORE')).toBe(false);
  });

  it('works on a plain object copy (an error from another copy of the package)', () => {
    const err = new InvalidArgumentError('payload.room', 'a string', 5);
    const spread = { ...err };
    const throughJson = JSON.parse(JSON.stringify(err)) as unknown;
    for (const copy of [spread, throughJson]) {
      expect(copy).not.toBeInstanceOf(OnceflowError);
      expect(isOnceflowError(copy)).toBe(true);
      expect(isOnceflowError(copy, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect(isOnceflowError(copy, 'ERR_INVALID_OPTION')).toBe(false);
    }
    expect(isOnceflowError({ name: 'OnceflowError', code: 'ERR_CLOSED', message: 'x' }, 'ERR_CLOSED')).toBe(
      true,
    );
  });

  it('rejects everything else', () => {
    const plain = Object.assign(new Error('x'), { code: 'ERR_STORE' });
    for (const value of [
      plain,
      null,
      undefined,
      'OnceflowError',
      { name: 'OnceflowError' },
      { name: 'OnceflowError', code: 42 },
      { name: 'TypeError', code: 'ERR_STORE' },
    ]) {
      expect(isOnceflowError(value)).toBe(false);
    }
  });

  it('the exported tables a process shares are frozen: error codes, Redis scripts, conformance cases', async () => {
    const { scripts } = await import('../redis/index.js');
    const { conformance } = await import('../testing/index.js');
    expect(Object.isFrozen(ErrorCode)).toBe(true);
    expect(Object.isFrozen(scripts)).toBe(true);
    for (const script of Object.values(scripts)) expect(Object.isFrozen(script)).toBe(true);
    expect(Object.isFrozen(conformance.cases)).toBe(true);
    const first = conformance.cases[0] as { steps: unknown[] };
    expect(Object.isFrozen(first) && Object.isFrozen(first.steps) && Object.isFrozen(first.steps[0])).toBe(
      true,
    );
  });
});
