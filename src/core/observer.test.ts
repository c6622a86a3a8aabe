import { afterEach, describe, expect, it, vi } from 'vitest';
import { errorName, type OnceflowEvent, observing } from './observer.js';

const event: OnceflowEvent = { part: 'adaptive-timeout', type: 'timeout', timeoutMs: 5 };

describe('observing', () => {
  afterEach(() => vi.restoreAllMocks());

  it('answers undefined without an observer, so call sites build no event', () => {
    expect(observing(undefined, 'observer')).toBeUndefined();
  });

  it('refuses anything but a function, naming the option', () => {
    expect(() => observing(42, 'ledger.observer')).toThrow(/`ledger.observer`/);
    expect(() => observing({}, 'observer')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_OPTION' }));
  });

  it('passes every event to the observer', () => {
    const seen: OnceflowEvent[] = [];
    const emit = observing((e: OnceflowEvent) => seen.push(e), 'observer');
    emit?.(event);
    emit?.(event);
    expect(seen).toEqual([event, event]);
  });

  it('swallows a throwing observer and reports it once per observer, across emitters', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const bad = () => {
      throw new TypeError('boom');
    };
    const a = observing(bad, 'observer');
    const b = observing(bad, 'observer');
    expect(() => {
      a?.(event);
      a?.(event);
      b?.(event);
    }).not.toThrow();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/adaptive-timeout\.timeout.*TypeError: boom/);
    expect(warn.mock.calls[0]?.[1]).toMatchObject({ code: 'ONCEFLOW_OBSERVER_THREW' });
    const other = observing(() => {
      throw new Error('second');
    }, 'observer');
    other?.(event);
    expect(warn).toHaveBeenCalledTimes(2);
  });
});

describe('errorName', () => {
  it('is a code, else a class name, else a type, and bounded', () => {
    expect(errorName(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe('ECONNRESET');
    expect(errorName(new RangeError('x'))).toBe('RangeError');
    expect(errorName('text')).toBe('string');
    expect(errorName(null)).toBe('null');
    expect(errorName({ code: 'E'.repeat(500) })).toHaveLength(64);
  });
});
