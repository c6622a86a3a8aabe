import { describe, expect, it } from 'vitest';
import { rejected } from '../../../test/support/thrown.js';
import { FakeClock } from '../../core/clock.js';
import { isOnceflowError } from '../../core/errors.js';
import { MemoryIdempotencyRecords } from './idempotency.js';

const begin = (r: MemoryIdempotencyRecords, key: string, token = 't', leaseMs = 1_000) =>
  r.idempotencyBegin({ name: 'n', key, payloadHash: 'h', token, leaseMs });

describe('MemoryIdempotencyRecords: bounded memory', () => {
  it('completed records past their ttl and in-progress ones past their lease are swept: size stays within the bound', async () => {
    const clock = new FakeClock(0);
    const records = new MemoryIdempotencyRecords(clock, 64);
    let max = 0;
    // 10 000 keys, each completed with a 100 ms ttl or left in progress (a holder that died),
    // one new key per ms: at most ~100 live at once.
    for (let i = 0; i < 10_000; i++) {
      clock.advance(1);
      await begin(records, `k${i}`, `t${i}`, 100);
      if (i % 2 === 0) await records.idempotencyComplete('n', `k${i}`, `t${i}`, 'v', 100);
      expect(records.size).toBeLessThanOrEqual(records.sweepBound);
      max = Math.max(max, records.size);
    }
    // 2 * max(64, survivors ~100): never the 10 000 keys begun.
    expect(max).toBeLessThanOrEqual(2 * 101);
  });

  it('the bound follows the live records: none is dropped before it expires', async () => {
    const clock = new FakeClock(0);
    const records = new MemoryIdempotencyRecords(clock, 8);
    for (let i = 0; i < 100; i++) await begin(records, `live${i}`, 't', 60_000);
    clock.advance(59_999);
    for (let i = 0; i < 100; i++)
      expect((await begin(records, `live${i}`, 'other')).outcome).toBe('in-progress');
    expect(records.size).toBe(100);
  });

  it('an expired record answers as absent whether or not the sweep passed', async () => {
    const clock = new FakeClock(0);
    const never = new MemoryIdempotencyRecords(clock, Number.MAX_SAFE_INTEGER);
    await begin(never, 'k', 't1', 10);
    clock.advance(10);
    expect(await never.idempotencyRenew('n', 'k', 't1', 10)).toBe(false);
    expect(await never.idempotencyComplete('n', 'k', 't1', 'v', 10)).toBe(false);
    expect(await never.idempotencyRelease('n', 'k', 't1')).toBe(false);
    expect(await begin(never, 'k', 't2')).toMatchObject({ outcome: 'acquired', takeover: true });
  });
});

describe('MemoryIdempotencyRecords: bad commands', () => {
  it('a lease or ttl that is not a positive safe integer, or a non-string field, is refused and changes nothing', async () => {
    const records = new MemoryIdempotencyRecords(new FakeClock(0));
    for (const leaseMs of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
      const err = await rejected(begin(records, 'k', 't', leaseMs));
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    }
    expect(isOnceflowError(await rejected(begin(records, 5 as never)), 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect(records.size).toBe(0);
    await begin(records, 'k', 't');
    expect(
      isOnceflowError(
        await rejected(records.idempotencyComplete('n', 'k', 't', 'v', 0)),
        'ERR_INVALID_ARGUMENT',
      ),
    ).toBe(true);
    expect(
      isOnceflowError(
        await rejected(records.idempotencyComplete('n', 'k', 't', 5 as never, 10)),
        'ERR_INVALID_ARGUMENT',
      ),
    ).toBe(true);
    expect(await records.idempotencyRenew('n', 'k', 't', 10)).toBe(true); // still held
  });

  it("a broken clock is the store's failure (ERR_STORE, not applied)", async () => {
    const records = new MemoryIdempotencyRecords({ now: () => Number.NaN });
    const err = await rejected(begin(records, 'k'));
    expect(isOnceflowError(err, 'ERR_STORE') && err.outcome).toBe('not-applied');
    expect(records.size).toBe(0);
  });
});
