import { describe, expect, it } from 'vitest';
import { rejected, thrown } from '../../test/support/thrown.js';
import { isOnceflowError } from '../core/errors.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { VersionGate } from './version-gate.js';

const gate = (name?: string, store = memoryStore()) =>
  new VersionGate({ store, ...(name === undefined ? {} : { name }) });

/** The code and field of a typed error; anything else fails the test. */
function typed(err: unknown): { code: string; path: unknown } {
  if (!isOnceflowError(err)) throw err;
  return { code: err.code, path: (err as { path?: unknown }).path ?? (err as { option?: unknown }).option };
}

describe('VersionGate (memory store)', () => {
  it('a newer version applies and replaces the value', async () => {
    const g = gate('users');
    expect(await g.upsert('u1', 1, { name: 'Ada' })).toEqual({ outcome: 'applied', version: 1n });
    expect(await g.upsert('u1', 2, { name: 'Ada L.' })).toEqual({ outcome: 'applied', version: 2n });
    expect(await g.get('u1')).toEqual({ version: 2n, value: { name: 'Ada L.' } });
    expect(await g.get('u2')).toBeUndefined();
  });

  it('an equal version is a duplicate and an older one stale: the stored version and value stay', async () => {
    const g = gate();
    await g.upsert('u1', 5, { v: 'five' });
    expect(await g.upsert('u1', 5, { v: 'another five' })).toEqual({ outcome: 'duplicate', version: 5n });
    expect(await g.upsert('u1', 4, { v: 'four' })).toEqual({ outcome: 'stale', version: 5n });
    expect(await g.upsert('u1', -5, { v: 'minus five' })).toEqual({ outcome: 'stale', version: 5n });
    expect(await g.get('u1')).toEqual({ version: 5n, value: { v: 'five' } });
  });

  it('versions compare as integers, not as text or doubles: 9 < 10, -10 < -1 < 0, 2^64 − 1 < 2^64', async () => {
    const g = gate();
    await g.upsert('a', 9, 'nine');
    expect((await g.upsert('a', 10, 'ten')).outcome).toBe('applied'); // '10' < '9' as text
    expect((await g.upsert('a', 9, 'nine')).outcome).toBe('stale');

    await g.upsert('n', -10, 'minus ten');
    expect((await g.upsert('n', -9, 'minus nine')).outcome).toBe('applied');
    expect((await g.upsert('n', -11, 'minus eleven')).outcome).toBe('stale');
    expect((await g.upsert('n', 0, 'zero')).outcome).toBe('applied');
    expect((await g.upsert('n', -0, 'minus zero')).outcome).toBe('duplicate'); // -0 is 0

    // As doubles, 2^64 − 1 and 2^64 are one number: the older would be a duplicate, not stale.
    const big = 2n ** 64n;
    expect(await g.upsert('b', big, 'big')).toEqual({ outcome: 'applied', version: big });
    expect(await g.upsert('b', big - 1n, 'older')).toEqual({ outcome: 'stale', version: big });
    expect(await g.upsert('b', big + 1n, 'newer')).toEqual({ outcome: 'applied', version: big + 1n });
    expect(await g.get('b')).toEqual({ version: big + 1n, value: 'newer' });
  });

  it('a number and a bigint of the same value are the same version', async () => {
    const g = gate();
    expect(await g.upsert('k', 7n, 'bigint')).toEqual({ outcome: 'applied', version: 7n });
    expect(await g.upsert('k', 7, 'number')).toEqual({ outcome: 'duplicate', version: 7n });
    expect(await g.upsert('k', Number.MAX_SAFE_INTEGER, 'max')).toEqual({
      outcome: 'applied',
      version: BigInt(Number.MAX_SAFE_INTEGER),
    });
    expect((await g.upsert('k', BigInt(Number.MAX_SAFE_INTEGER) + 1n, 'past it')).outcome).toBe('applied');
    expect((await g.get('k'))?.value).toBe('past it');
  });

  it('keys and gates are apart: another key, or the same key under another name, starts empty', async () => {
    const store = memoryStore();
    const users = gate('users', store);
    const orders = gate('orders', store);
    await users.upsert('1', 10, 'user 1');
    expect(await users.upsert('2', 1, 'user 2')).toEqual({ outcome: 'applied', version: 1n });
    expect(await orders.upsert('1', 1, 'order 1')).toEqual({ outcome: 'applied', version: 1n });
    expect(await orders.get('1')).toEqual({ version: 1n, value: 'order 1' });
    expect(await users.get('1')).toEqual({ version: 10n, value: 'user 1' });
    expect(await gate(undefined, store).get('1')).toBeUndefined(); // name 'default'
  });

  it('the stored value is a copy: changing what was passed in, or what get returned, changes nothing', async () => {
    const g = gate();
    const row = { tags: ['a'] };
    await g.upsert('k', 1, row);
    row.tags.push('changed after');
    const got = await g.get('k');
    (got?.value as { tags: string[] }).tags.push('changed by a reader');
    expect(await g.get('k')).toEqual({ version: 1n, value: { tags: ['a'] } });
  });

  it('a bad version, key or value is a typed error (a rejection) and changes nothing', async () => {
    const g = gate();
    await g.upsert('k', 3, 'kept');
    const bad: [string, () => Promise<unknown>, string][] = [
      ['fractional version', () => g.upsert('k', 4.5, 'x'), 'version'],
      ['NaN version', () => g.upsert('k', Number.NaN, 'x'), 'version'],
      ['Infinity version', () => g.upsert('k', Number.POSITIVE_INFINITY, 'x'), 'version'],
      ['unsafe version 2^53', () => g.upsert('k', 2 ** 53, 'x'), 'version'],
      ['string version', () => g.upsert('k', '9' as never, 'x'), 'version'],
      ['missing version', () => g.upsert('k', undefined as never, 'x'), 'version'],
      ['empty key', () => g.upsert('', 9, 'x'), 'key'],
      ['number key', () => g.upsert(9 as never, 9, 'x'), 'key'],
      ['undefined value', () => g.upsert('k', 9, undefined as never), 'value'],
      ['function value', () => g.upsert('k', 9, (() => 1) as never), 'value'],
      ['empty key on get', () => g.get(''), 'key'],
    ];
    for (const [what, call, path] of bad) {
      expect(typed(await rejected(call())), what).toEqual({ code: 'ERR_INVALID_ARGUMENT', path });
      expect(await g.get('k'), what).toEqual({ version: 3n, value: 'kept' });
    }
    expect(await g.get('9')).toBeUndefined(); // the number key stored nothing under '9' either
  });

  it('bad options are typed errors at construction', () => {
    expect(typed(thrown(() => new VersionGate({ store: {} as never })))).toEqual({
      code: 'ERR_INVALID_OPTION',
      path: 'store',
    });
    expect(typed(thrown(() => new VersionGate({ store: memoryStore(), name: '' })))).toEqual({
      code: 'ERR_INVALID_OPTION',
      path: 'name',
    });
    expect(typed(thrown(() => new VersionGate(undefined as never)))).toEqual({
      code: 'ERR_INVALID_OPTION',
      path: 'options',
    });
  });

  it('a name of null is refused, as a ledger refuses it (undefined is the default)', () => {
    expect(typed(thrown(() => new VersionGate({ store: memoryStore(), name: null as never })))).toEqual({
      code: 'ERR_INVALID_OPTION',
      path: 'name',
    });
    expect(gate().name).toBe('default');
  });
});
