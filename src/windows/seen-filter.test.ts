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
    // Each generation holds about `expected` ids (as many as set its bits to their sizing): the
    // pair about twice that.
    expect(seen.size).toBeLessThanOrEqual(2_200);
    expect(seen.rotations).toBeGreaterThanOrEqual(19);
    expect(seen.expected).toBe(1_000);
    expect(seen.falsePositiveRate).toBe(0.01);
  });

  it('remembers an id for at least `span` later new ids wherever it lands, and forgets it after', () => {
    const expected = 50;
    // At 1e-6 (k = 20) a generation fills with about 50 ids and surely not before `span` of them.
    const span = new SeenFilter({ expected, falsePositiveRate: 1e-6 }).span;
    expect(span).toBeGreaterThan(0);
    expect(span).toBeLessThanOrEqual(expected);
    // The probe after 0 to 2 x expected other ids: somewhere it is a generation's newest id (the
    // shortest span it can have).
    for (let offset = 0; offset <= 2 * expected; offset++) {
      const seen = new SeenFilter({ expected, falsePositiveRate: 1e-6 });
      for (let i = 0; i < offset; i++) seen.add(`before:${i}`);
      seen.add('probe');
      for (let i = 0; i < span; i++) {
        seen.add(`after:${i}`);
        expect(seen.mightContain('probe')).toBe(true);
      }
      for (let i = 0; i < 3 * expected; i++) seen.add(`later:${i}`);
      expect(seen.mightContain('probe')).toBe(false);
    }
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
            for (const r of recent.slice(-seen.span)) expect(seen.mightContain(r)).toBe(true);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  for (const p of [0.01, 0.2, 0.5]) {
    it(`p = ${p}: with both generations full, "maybe" for never-seen ids stays within 1 - (1 - p)^2`, () => {
      const seen = new SeenFilter({ expected: 10_000, falsePositiveRate: p });
      // Two rotations, then the current generation up to its last id before the next: the
      // fullest the pair gets.
      let i = 0;
      while (seen.rotations < 2) seen.add(`known:${i++}`);
      const probe = new SeenFilter({ expected: 10_000, falsePositiveRate: p });
      let n = i;
      for (let j = 0; j < i; j++) probe.add(`known:${j}`);
      while (probe.rotations === 2) probe.add(`known:${n++}`);
      // `n - 1` ids make the fullest pair (the n-th rotated): replay them into `seen`.
      for (; i < n - 1; i++) seen.add(`known:${i}`);
      expect(seen.rotations).toBe(2);
      let hits = 0;
      const N = 100_000;
      for (let q = 0; q < N; q++) if (seen.mightContain(`absent:${q}`)) hits++;
      const bound = 1 - (1 - p) ** 2;
      // 100,000 probes: the measured rate is within ~4 standard deviations of its mean (< 0.003).
      expect(hits / N).toBeLessThan(bound * 1.02 + 0.003);
      expect(hits / N).toBeGreaterThan(p);
      expect(seen.estimatedFalsePositiveRate()).toBeLessThan(bound * 1.02);
    });
  }

  it('repeats do not fill a generation: ids added again and again never push older ids out', () => {
    const seen = new SeenFilter({ expected: 10 });
    for (let i = 0; i < 5; i++) seen.add(`id:${i}`);
    for (let r = 0; r < 1_000; r++) seen.add(`id:${r % 5}`);
    expect(seen.rotations).toBe(0);
    for (let i = 0; i < 5; i++) expect(seen.mightContain(`id:${i}`)).toBe(true);
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
  it('refuses saved forms toJSON never writes: bits with no ids, an inflated size, mixed sizings, a huge bit set', () => {
    const seen = new SeenFilter({ expected: 100 });
    seen.add('a');
    const saved = seen.toJSON();
    const full = btoa(String.fromCharCode(...new Uint8Array(atob(saved.current.bits).length).fill(255)));
    const refused = (bad: unknown, field: string) => {
      let error: unknown;
      try {
        SeenFilter.from(bad as never);
      } catch (err) {
        error = err;
      }
      expect(isOnceflowError(error) && error.code).toBe('ERR_INVALID_ARGUMENT');
      expect(String(error)).toContain(field);
    };
    // Every bit set and no id counted: it would answer "maybe" for everything and never rotate.
    refused({ ...saved, current: { ...saved.current, bits: full, size: 0 } }, 'saved.current.size');
    refused({ ...saved, current: { ...saved.current, size: 1e15 } }, 'saved.current.size');
    refused({ ...saved, previous: { ...saved.previous, expected: 101 } }, 'saved.previous');
    refused({ ...saved, previous: { ...saved.previous, falsePositiveRate: 0.02 } }, 'saved.previous');
    refused({ ...saved, current: { ...saved.current, bits: 'A'.repeat(50_000_000) } }, 'saved.current.bits');
    expect(SeenFilter.from(saved).mightContain('a')).toBe(true);
  });

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
      [{ ...good, previous: other.previous }, 'saved.previous.expected'],
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
