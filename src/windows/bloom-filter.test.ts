import { describe, expect, it } from 'vitest';
import { isOnceflowError } from '../core/errors.js';
import { BloomFilter, bloomBits, MAX_BLOOM_BYTES, MAX_BLOOM_KEY_LENGTH } from './bloom-filter.js';

const thrown = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('did not throw');
};

// The measured false-positive rate of a filter filled with `n` keys, over `absent` keys never
// added. Deterministic keys (no randomness): the figure is the same on every run, so the bounds
// below cannot flake; they are wide enough that a correct filter passes with any decent hash.
function measured(n: number, p: number, absent: number): { rate: number; filter: BloomFilter } {
  const filter = new BloomFilter({ expected: n, falsePositiveRate: p });
  for (let i = 0; i < n; i++) filter.add(`user:${i}`);
  let hits = 0;
  for (let i = 0; i < absent; i++) if (filter.mightContain(`absent:${i}`)) hits++;
  return { rate: hits / absent, filter };
}

describe('BloomFilter sizing (m = -n ln p / (ln 2)^2, k = round(m/n ln 2))', () => {
  it.each([
    [1_000, 0.01, 9_600, 7],
    [10_000, 0.01, 95_872, 7],
    [10_000, 0.001, 143_776, 10],
    [1_000_000, 0.01, 9_585_088, 7],
    [100_000, 0.1, 479_264, 3],
  ])('n = %i, p = %f: %i bits, %i hashes', (n, p, bits, hashes) => {
    const f = new BloomFilter({ expected: n, falsePositiveRate: p });
    expect(f.bits).toBe(bits);
    expect(f.bits).toBe(bloomBits(n, p));
    expect(f.bits % 32).toBe(0);
    expect(f.bits).toBeGreaterThanOrEqual((-n * Math.log(p)) / Math.LN2 ** 2);
    expect(f.bits - (-n * Math.log(p)) / Math.LN2 ** 2).toBeLessThan(33);
    expect(f.bytes).toBe(bits / 8);
    expect(f.hashes).toBe(hashes);
  });

  it('1% costs about 9.6 bits (1.2 bytes) per key, 0.1% about 14.4', () => {
    expect(bloomBits(1_000_000, 0.01) / 1_000_000).toBeCloseTo(9.585, 2);
    expect(bloomBits(1_000_000, 0.001) / 1_000_000).toBeCloseTo(14.378, 2);
  });
});

describe('BloomFilter false-positive rate, measured', () => {
  it('n = 10,000 at p = 1%: within [0.5%, 2%] over 100,000 absent keys', () => {
    const { rate, filter } = measured(10_000, 0.01, 100_000);
    expect(rate).toBeGreaterThanOrEqual(0.005);
    expect(rate).toBeLessThanOrEqual(0.02);
    expect(filter.estimatedFalsePositiveRate()).toBeGreaterThan(0.008);
    expect(filter.estimatedFalsePositiveRate()).toBeLessThan(0.0105);
  });

  it('n = 10,000 at p = 0.1%: within [0.05%, 0.2%] over 100,000 absent keys', () => {
    const { rate } = measured(10_000, 0.001, 100_000);
    expect(rate).toBeGreaterThanOrEqual(0.0005);
    expect(rate).toBeLessThanOrEqual(0.002);
  });

  it('overfilled (3x the expected keys) the rate rises, and the estimate says so', () => {
    const { rate, filter } = measured(3_000, 0.01, 50_000);
    const over = new BloomFilter({ expected: 1_000, falsePositiveRate: 0.01 });
    for (let i = 0; i < 3_000; i++) over.add(`user:${i}`);
    let hits = 0;
    for (let i = 0; i < 50_000; i++) if (over.mightContain(`absent:${i}`)) hits++;
    expect(hits / 50_000).toBeGreaterThan(0.1);
    expect(over.estimatedFalsePositiveRate()).toBeGreaterThan(0.1);
    expect(rate).toBeLessThan(0.02);
    expect(filter.estimatedFalsePositiveRate()).toBeLessThan(0.0105);
  });
});

describe('BloomFilter answers', () => {
  it('no false negative: every added key is maybe-present', () => {
    const f = new BloomFilter({ expected: 5_000, falsePositiveRate: 0.05 });
    const keys = Array.from({ length: 5_000 }, (_, i) => `k${i * 7919}:${'é'.repeat(i % 5)}`);
    for (const k of keys) f.add(k);
    for (const k of keys) expect(f.mightContain(k)).toBe(true);
  });

  it('an empty filter answers false for all, and size counts the keys that set a new bit', () => {
    const f = new BloomFilter({ expected: 100 });
    expect(f.mightContain('a')).toBe(false);
    expect(f.add('a')).toBe(true);
    expect(f.add('a')).toBe(false);
    expect(f.size).toBe(1);
    expect(f.targetFalsePositiveRate).toBe(0.01);
    expect(f.expected).toBe(100);
  });

  it('reset forgets every key', () => {
    const f = new BloomFilter({ expected: 100 });
    f.add('a');
    f.reset();
    expect(f.mightContain('a')).toBe(false);
    expect(f.size).toBe(0);
    expect(f.estimatedFalsePositiveRate()).toBe(0);
  });

  it('hashes the whole key: keys that differ only in their last unit part', () => {
    const f = new BloomFilter({ expected: 1_000, falsePositiveRate: 0.001 });
    const base = 'x'.repeat(200);
    f.add(`${base}a`);
    expect(f.mightContain(`${base}b`)).toBe(false);
  });
});

describe('BloomFilter bounds and bad input', () => {
  it.each([
    [{ expected: 0 }, 'expected'],
    [{ expected: 1.5 }, 'expected'],
    [{ expected: 10, falsePositiveRate: 0 }, 'falsePositiveRate'],
    [{ expected: 10, falsePositiveRate: 0.6 }, 'falsePositiveRate'],
    [{ expected: 10, falsePositiveRate: Number.NaN }, 'falsePositiveRate'],
    [{ expected: 10, falsePositveRate: 0.1 }, 'falsePositveRate'],
  ])('refuses %o naming %s', (options, option) => {
    const err = thrown(() => new BloomFilter(options as never));
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as { option: string }).option).toBe(option);
  });

  it('a misspelt option gets a did-you-mean', () => {
    const err = thrown(() => new BloomFilter({ expected: 10, falsePositveRate: 0.1 } as never));
    expect((err as Error).message).toContain('did you mean `falsePositiveRate`?');
  });

  it(`refuses a filter above ${MAX_BLOOM_BYTES} bytes, and takes one just under`, () => {
    // 56,000,000 keys at 1% need ~67.1 MB > 64 MiB; 55,000,000 need ~65.9 MB < 67.1 MB.
    const err = thrown(() => new BloomFilter({ expected: 57_000_000 }));
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as Error).message).toContain('at most 67108864 bytes');
    expect(bloomBits(55_000_000, 0.01) / 8).toBeLessThanOrEqual(MAX_BLOOM_BYTES);
  });

  it('refuses a key that is not a string or is too long', () => {
    const f = new BloomFilter({ expected: 10 });
    expect(
      isOnceflowError(
        thrown(() => f.add(42 as never)),
        'ERR_INVALID_ARGUMENT',
      ),
    ).toBe(true);
    const long = 'x'.repeat(MAX_BLOOM_KEY_LENGTH + 1);
    expect(
      isOnceflowError(
        thrown(() => f.mightContain(long)),
        'ERR_INVALID_ARGUMENT',
      ),
    ).toBe(true);
    expect(f.size).toBe(0);
  });
});

describe('BloomFilter toJSON / from', () => {
  it('round-trips through JSON text: the same answers, size and sizing', () => {
    const f = new BloomFilter({ expected: 2_000, falsePositiveRate: 0.02 });
    for (let i = 0; i < 1_500; i++) f.add(`k${i}`);
    const again = BloomFilter.from(JSON.parse(JSON.stringify(f)));
    expect(again.size).toBe(f.size);
    expect(again.bits).toBe(f.bits);
    expect(again.hashes).toBe(f.hashes);
    expect(again.targetFalsePositiveRate).toBe(0.02);
    for (let i = 0; i < 5_000; i++) expect(again.mightContain(`k${i}`)).toBe(f.mightContain(`k${i}`));
  });

  it('the bit set is the 32-bit words little-endian: bit i of the filter is bit i % 8 of byte i / 8', () => {
    const f = new BloomFilter({ expected: 100, falsePositiveRate: 0.01 });
    f.add('a');
    const bytes = Uint8Array.from(atob(f.toJSON().bits), (c) => c.charCodeAt(0));
    expect(bytes.length).toBe(f.bytes);
    const set: number[] = [];
    bytes.forEach((b, i) => {
      for (let j = 0; j < 8; j++) if (b & (1 << j)) set.push(i * 8 + j);
    });
    expect(set.length).toBeGreaterThan(0);
    expect(set.length).toBeLessThanOrEqual(f.hashes);
    // A filter with only those bits set answers as the original for 'a' and an absent key.
    const copy = BloomFilter.from({ expected: 100, falsePositiveRate: 0.01, size: 1, bits: f.toJSON().bits });
    expect(copy.mightContain('a')).toBe(true);
    expect(copy.mightContain('b')).toBe(f.mightContain('b'));
  });

  it.each([
    [{ expected: 10, falsePositiveRate: 0.01, size: 0, bits: '' }, 'saved.bits'],
    [{ expected: 10, falsePositiveRate: 0.01, size: 0, bits: '***' }, 'saved.bits'],
    [{ expected: 10, falsePositiveRate: 0.01, size: -1, bits: btoa('\0'.repeat(12)) }, 'saved.size'],
    [{ expected: 0, falsePositiveRate: 0.01, size: 0, bits: '' }, 'saved.expected'],
    [{ expected: 10, falsePositiveRate: 2, size: 0, bits: '' }, 'saved.falsePositiveRate'],
    [{ expected: 10, falsePositiveRate: 0.01, size: 0, bits: '', extra: 1 }, 'saved.extra'],
    ['bits', 'saved'],
  ])('refuses %o naming %s', (saved, path) => {
    const err = thrown(() => BloomFilter.from(saved as never));
    expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect((err as { path: string }).path).toBe(path);
  });
});
