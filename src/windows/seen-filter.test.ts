import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isOnceflowError } from '../core/errors.js';
import { bloomBits } from './bloom-filter.js';
import { SeenFilter } from './seen-filter.js';

const thrown = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('did not throw');
};

describe('SeenFilter: a rotating pair of Bloom filters', () => {
  it('memory is fixed at 2 x bloomBits(expected, p) / 8, however many ids are added', () => {
    const seen = new SeenFilter({ expected: 1_000, falsePositiveRate: 0.01 });
    expect(seen.bytes).toBe((2 * bloomBits(1_000, 0.01)) / 8);
    for (let i = 0; i < 20_000; i++) seen.add(`id:${i}`);
    expect(seen.bytes).toBe((2 * bloomBits(1_000, 0.01)) / 8);
    // Each generation holds at most `expected` ids: the pair at most twice that.
    expect(seen.size).toBeLessThanOrEqual(2_000);
    expect(seen.rotations).toBeGreaterThanOrEqual(19);
    expect(seen.expected).toBe(1_000);
    expect(seen.falsePositiveRate).toBe(0.01);
  });

  it('remembers an id for at least `expected` later new ids, and forgets it within 2 x expected + 1', () => {
    const expected = 50;
    const seen = new SeenFilter({ expected, falsePositiveRate: 1e-6 });
    // Fill `current` to the brim so the probe lands as its newest id (the shortest span).
    for (let i = 0; i < expected - 1; i++) seen.add(`before:${i}`);
    seen.add('probe');
    for (let i = 0; i < expected; i++) {
      seen.add(`after:${i}`);
      expect(seen.mightContain('probe')).toBe(true);
    }
    seen.add('one-more');
    expect(seen.mightContain('probe')).toBe(false);
  });

  it('property: no false negative for an id within the last `expected` new ids', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 400 }),
        (expected, ids) => {
          const seen = new SeenFilter({ expected, falsePositiveRate: 0.2 });
          const recent: string[] = []; // distinct ids, newest last (a repeat moves to the end)
          for (const n of ids) {
            const id = `e${n}`;
            seen.add(id);
            const at = recent.indexOf(id);
            if (at >= 0) recent.splice(at, 1);
            recent.push(id);
            for (const r of recent.slice(-expected)) expect(seen.mightContain(r)).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('the measured false-positive rate at `expected` ids (after rotations) is within 2.5x of the target', () => {
    const seen = new SeenFilter({ expected: 10_000, falsePositiveRate: 0.01 });
    for (let i = 0; i < 55_000; i++) seen.add(`known:${i}`);
    let hits = 0;
    for (let i = 0; i < 100_000; i++) if (seen.mightContain(`absent:${i}`)) hits++;
    // Two generations of at most 10,000 ids each at 1%: at most 1 - 0.99^2 = 1.99%.
    expect(hits / 100_000).toBeGreaterThan(0.005);
    expect(hits / 100_000).toBeLessThan(0.025);
    expect(seen.estimatedFalsePositiveRate()).toBeLessThan(0.0199);
  });

  it('repeats do not fill a generation: ids added again and again never push older ids out', () => {
    const seen = new SeenFilter({ expected: 10 });
    for (let i = 0; i < 10; i++) seen.add(`id:${i}`);
    for (let r = 0; r < 1_000; r++) seen.add(`id:${r % 10}`);
    expect(seen.rotations).toBe(0);
    for (let i = 0; i < 10; i++) expect(seen.mightContain(`id:${i}`)).toBe(true);
  });

  it('clear forgets every id', () => {
    const seen = new SeenFilter({ expected: 10 });
    seen.add('a');
    seen.clear();
    expect(seen.mightContain('a')).toBe(false);
    expect(seen.size).toBe(0);
  });
});

describe('SeenFilter: toJSON / from (a restart)', () => {
  it('answers as the saved filter, both generations, and keeps rotating from there', () => {
    const seen = new SeenFilter({ expected: 100, falsePositiveRate: 0.05 });
    for (let i = 0; i < 150; i++) seen.add(`id:${i}`); // one rotation: both generations hold ids
    expect(seen.rotations).toBe(1);
    const again = SeenFilter.from(JSON.parse(JSON.stringify(seen)));
    for (let i = 0; i < 1_000; i++) expect(again.mightContain(`id:${i}`)).toBe(seen.mightContain(`id:${i}`));
    expect(again.size).toBe(seen.size);
    expect(again.bytes).toBe(seen.bytes);
    for (let i = 150; i < 200; i++) {
      seen.add(`id:${i}`);
      again.add(`id:${i}`);
    }
    for (let i = 0; i < 1_000; i++) expect(again.mightContain(`id:${i}`)).toBe(seen.mightContain(`id:${i}`));
  });

  it('refuses a saved form that is not one, naming the field', () => {
    const good = new SeenFilter({ expected: 10 }).toJSON();
    const other = new SeenFilter({ expected: 20 }).toJSON();
    const cases: [unknown, string][] = [
      [null, 'saved'],
      [{ ...good, version: 2 }, 'saved.version'],
      [{ ...good, extra: true }, 'saved.extra'],
      [{ ...good, previous: other.previous }, 'saved.previous'],
      [{ ...good, current: { ...good.current, bits: 'AAAA' } }, 'saved.current.bits'],
      [{ ...good, previous: { ...good.previous, size: 1.5 } }, 'saved.previous.size'],
    ];
    for (const [saved, path] of cases) {
      const err = thrown(() => SeenFilter.from(saved as never));
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect((err as { path: string }).path).toBe(path);
    }
  });
});

describe('SeenFilter: options', () => {
  it.each([
    [{ expected: 0 }, 'expected'],
    [{ expected: 10, falsePositiveRate: 0.9 }, 'falsePositiveRate'],
    [{ expected: 10, expcted: 1 }, 'expcted'],
  ])('refuses %o naming %s', (options, option) => {
    const err = thrown(() => new SeenFilter(options as never));
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as { option: string }).option).toBe(option);
  });

  it('a misspelt option gets a did-you-mean, a bad id a typed error', () => {
    expect(() => new SeenFilter({ expected: 10, falsePositivRate: 0.1 } as never)).toThrow(
      'did you mean `falsePositiveRate`?',
    );
    expect(
      isOnceflowError(
        thrown(() => new SeenFilter({ expected: 10 }).add(7 as never)),
        'ERR_INVALID_ARGUMENT',
      ),
    ).toBe(true);
  });
});
