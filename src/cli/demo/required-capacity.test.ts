import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SignatureWindow } from '../../index.js';
import { measureRequiredCapacity, requiredCapacityOfPairs } from './required-capacity.js';

const log = (owner: string, sigs: string): [string, string][] => [...sigs].map((s) => [owner, s]);

describe('required capacity of a delivery log', () => {
  it('is 1 when nothing is delivered twice', () => {
    expect(requiredCapacityOfPairs(log('p', 'abcdef'))).toBe(1);
    expect(requiredCapacityOfPairs([])).toBe(1);
  });

  it('counts distinct other signatures first seen between a first and a last delivery', () => {
    // a, then b and c are new, then a again: 2 others → capacity 3.
    expect(requiredCapacityOfPairs(log('p', 'abca'))).toBe(3);
    // Repeats of b in between are not new signatures.
    expect(requiredCapacityOfPairs(log('p', 'abbbca'))).toBe(3);
    // It is the last delivery that counts, not the first repeat.
    expect(requiredCapacityOfPairs(log('p', 'abacda'))).toBe(4);
  });

  it('does not count signatures seen before the first delivery', () => {
    // b and c were first seen before a; between a's deliveries only d is new, and b and c
    // delivered again in between are repeats, not new signatures.
    expect(requiredCapacityOfPairs(log('p', 'bcada'))).toBe(2);
    expect(requiredCapacityOfPairs(log('p', 'bcadcba'))).toBe(4); // b's repeat: c, a, d were new
    expect(requiredCapacityOfPairs(log('p', 'bcadca'))).toBe(3); // c's repeat: a, d were new
  });

  it('keeps owners apart: other players deliveries do not count', () => {
    const mixed: [string, string][] = [
      ['p', 'a'],
      ['q', 'x'],
      ['q', 'y'],
      ['q', 'z'],
      ['p', 'a'],
    ];
    expect(requiredCapacityOfPairs(mixed)).toBe(1);
    // The same signature under two owners is two keys.
    expect(
      requiredCapacityOfPairs([
        ['p', 'a'],
        ['q', 'a'],
        ['p', 'b'],
        ['q', 'a'],
      ]),
    ).toBe(1);
  });

  it('gives 4 for the settlement bound and 5 when (a) is relaxed (DESIGN §3.2)', () => {
    // I1 F1 I2 F2, then a repeat of I1 before round 3 begins: sibling + next round's two = 3 others.
    expect(requiredCapacityOfPairs(log('p', 'ABCDA'))).toBe(4);
    // I0, I1, then F0 late (after I1), I2, F1 late, F2, then I1 repeated: F0, I2, F1, F2 = 4 others.
    // (lowercase = final, digits = round)
    const relaxed = ['I0', 'I1', 'F0', 'I2', 'F1', 'F2', 'I1'].map((s) => ['p', s] as [string, string]);
    expect(requiredCapacityOfPairs(relaxed)).toBe(5);
  });

  it('reports the key that needed the most and skips negative keys (joins)', () => {
    const r = measureRequiredCapacity([0, 0, 0, 0, 0], [0, -1, 1, -5, 0], 2, 1);
    expect(r).toEqual({ capacity: 2, others: 1, worstKey: 0, worstOwner: 0 });
  });

  it('is exactly the smallest FIFO capacity that lets no repeat through (both sides of the bound)', () => {
    const sigs = fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'), { maxLength: 40 });
    fc.assert(
      fc.property(sigs, (sequence) => {
        const need = requiredCapacityOfPairs(sequence.map((s) => ['p', s] as [string, string]));
        const leaks = (capacity: number): number => {
          const w = new SignatureWindow({ capacity });
          const seen = new Set<string>();
          let through = 0;
          for (const s of sequence) {
            if (w.admit(s) === 'fresh' && seen.has(s)) through++;
            seen.add(s);
          }
          return through;
        };
        expect(leaks(need)).toBe(0);
        if (need > 1) expect(leaks(need - 1)).toBeGreaterThan(0);
      }),
      { numRuns: 500 },
    );
  });
});
