import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { isOnceflowError } from '../core/errors.js';
import type { Order } from '../core/validate.js';
import { type AdmitOutcome, SignatureWindow } from './signature-window.js';

function admitAll(w: SignatureWindow, sigs: string[]): AdmitOutcome[] {
  return sigs.map((s) => w.admit(s));
}

/** The simplest window that could be right: an array, `includes`, `shift`. */
class ModelWindow {
  entries: { sig: string; order: Order | undefined }[] = [];
  horizon: Order | undefined;
  constructor(readonly capacity: number) {}
  admit(sig: string, order?: Order): AdmitOutcome {
    if (this.entries.some((e) => e.sig === sig)) return 'duplicate';
    if (order !== undefined && this.horizon !== undefined && order <= this.horizon) return 'stale';
    this.entries.push({ sig, order });
    while (this.entries.length > this.capacity) {
      const old = this.entries.shift()!;
      if (old.order !== undefined && (this.horizon === undefined || old.order > this.horizon)) {
        this.horizon = old.order;
      }
    }
    return 'fresh';
  }
}

describe('SignatureWindow: admit', () => {
  it('runs the TSDoc example', () => {
    const w = new SignatureWindow({ capacity: 4 });
    expect(w.admit('v1|room=a|round=1|net=5|final=false', 1)).toBe('fresh');
    expect(w.admit('v1|room=a|round=1|net=5|final=false', 1)).toBe('duplicate');
  });

  it('answers duplicate for a present signature and changes nothing', () => {
    const w = new SignatureWindow({ capacity: 3 });
    admitAll(w, ['a', 'b']);
    const before = w.toJSON();
    expect(w.admit('a')).toBe('duplicate');
    expect(w.admit('b', 99)).toBe('duplicate');
    expect(w.toJSON()).toEqual(before);
  });

  it('is FIFO, not LRU: a duplicate does not refresh its position', () => {
    const w = new SignatureWindow({ capacity: 4 });
    expect(admitAll(w, ['a', 'b', 'c', 'd'])).toEqual(['fresh', 'fresh', 'fresh', 'fresh']);
    expect(w.admit('a')).toBe('duplicate');
    expect(w.admit('e')).toBe('fresh');
    // LRU would have evicted b (a was just used); FIFO evicts a, the first admitted.
    expect(w.has('a')).toBe(false);
    expect(w.has('b')).toBe(true);
    expect(w.signatures()).toEqual(['b', 'c', 'd', 'e']);
  });

  it('evicts the oldest entry one at a time', () => {
    const w = new SignatureWindow({ capacity: 3 });
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const sig = `s${i}`;
      seen.push(sig);
      expect(w.admit(sig)).toBe('fresh');
      expect(w.size).toBe(Math.min(i + 1, 3));
      expect(w.signatures()).toEqual(seen.slice(-3));
    }
  });

  it('is never cleared wholesale: its size never drops (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 2, 4, 5, 33, 40),
        fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 300 }),
        (capacity, seq) => {
          const w = new SignatureWindow({ capacity });
          let fresh = 0;
          let size = 0;
          for (const n of seq) {
            if (w.admit(`s${n}`) === 'fresh') fresh++;
            expect(w.size).toBeGreaterThanOrEqual(size);
            expect(w.size).toBe(Math.min(fresh, capacity));
            size = w.size;
          }
        },
      ),
    );
  });

  it('rejects an empty or non-string signature and a bad order with ERR_INVALID_ARGUMENT', () => {
    const w = new SignatureWindow({ capacity: 2 });
    for (const sig of ['', 5, null, undefined]) {
      const err = thrown(() => w.admit(sig as string));
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect((err as Error).message).toMatch(/^Expected `signature` to be a non-empty string/);
    }
    for (const order of [1.5, Number.NaN, '3', null, 2 ** 53]) {
      const err = thrown(() => w.admit('x', order as number));
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect((err as Error).message).toMatch(/^Expected `order` to be a safe integer or a bigint/);
    }
    expect(w.size).toBe(0);
  });

  it.each([
    0,
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    2 ** 53,
    '4',
    4n,
    undefined,
  ])('rejects capacity %s with ERR_INVALID_OPTION', (capacity) => {
    const err = thrown(() => new SignatureWindow({ capacity: capacity as number }));
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as Error).message).toMatch(/^Expected `capacity` to be a positive safe integer, got /);
  });

  it('names the capacity exactly in the message', () => {
    expect(() => new SignatureWindow({ capacity: 0 })).toThrow(
      'Expected `capacity` to be a positive safe integer, got `0` (number)',
    );
    expect(() => new SignatureWindow(undefined as never)).toThrow(/`capacity`/);
    expect(() => SignatureWindow.from([], { capacity: -2 })).toThrow(/`capacity`/);
  });
});

describe('SignatureWindow: horizon', () => {
  it('remembers the highest evicted order and answers stale at or below it, changing nothing', () => {
    const w = new SignatureWindow({ capacity: 2 });
    expect(w.admit('a', 1)).toBe('fresh');
    expect(w.admit('b', 2)).toBe('fresh');
    expect(w.horizon).toBeUndefined();
    expect(w.admit('c', 3)).toBe('fresh'); // evicts a
    expect(w.horizon).toBe(1);
    const before = w.toJSON();
    expect(w.admit('a', 1)).toBe('stale'); // the forgotten repeat fails safe
    expect(w.admit('x', 0)).toBe('stale');
    expect(w.admit('x', 0)).toBe('stale'); // not recorded: stays stale
    expect(w.toJSON()).toEqual(before);
    expect(w.admit('y', 2)).toBe('fresh'); // above the horizon
  });

  it('answers duplicate before stale for a present signature', () => {
    const w = new SignatureWindow({ capacity: 2 });
    w.admit('a', 5);
    w.admit('b', 1);
    w.admit('c', 6); // evicts a: horizon 5, b (order 1) is still present
    expect(w.horizon).toBe(5);
    expect(w.admit('b', 1)).toBe('duplicate');
  });

  it('keeps the highest evicted order, not the last', () => {
    const w = new SignatureWindow({ capacity: 1 });
    w.admit('a', 10);
    w.admit('b', 3); // evicts a
    expect(w.horizon).toBe(10);
    w.admit('c', 20); // evicts b (3)
    expect(w.horizon).toBe(10);
  });

  it('is never moved by entries without an order, and never applies to them', () => {
    const w = new SignatureWindow({ capacity: 1 });
    w.admit('a');
    w.admit('b', 5); // evicts a (no order)
    expect(w.horizon).toBeUndefined();
    w.admit('c'); // evicts b (5)
    expect(w.horizon).toBe(5);
    w.admit('d'); // evicts c (no order)
    expect(w.horizon).toBe(5);
    expect(w.admit('e')).toBe('fresh');
    expect(w.admit('f', 5)).toBe('stale');
  });

  it('compares bigint and number orders numerically', () => {
    const big = new SignatureWindow({ capacity: 1 });
    big.admit('a', 10n);
    big.admit('b', 11); // evicts a
    expect(big.horizon).toBe(10n);
    expect(big.admit('x', 10)).toBe('stale');
    expect(big.admit('y', 11n)).toBe('fresh');
    expect(big.horizon).toBe(11);

    const huge = new SignatureWindow({ capacity: 1 });
    huge.admit('a', 2n ** 60n);
    huge.admit('b', 2n ** 60n + 1n);
    expect(huge.admit('x', Number.MAX_SAFE_INTEGER)).toBe('stale');
    expect(huge.admit('y', 2n ** 60n)).toBe('stale'); // exactly at the horizon
    expect(huge.admit('z', 2n ** 60n + 2n)).toBe('fresh');
  });
});

describe('SignatureWindow: toJSON / from', () => {
  it('writes the current format', () => {
    const w = new SignatureWindow({ capacity: 2 });
    w.admit('a', 1);
    w.admit('b');
    w.admit('c', 2n ** 64n);
    expect(w.toJSON()).toEqual({
      format: 'onceflow.window.v1',
      signatures: ['b', 'c'],
      orders: [null, '18446744073709551616'],
      horizon: '1',
    });
    expect(new SignatureWindow({ capacity: 2 }).toJSON()).toEqual({
      format: 'onceflow.window.v1',
      signatures: [],
      orders: [],
      horizon: null,
    });
  });

  it('round-trips through JSON, horizon and orders included, and then behaves the same (property)', () => {
    const op = fc.record({
      sig: fc.integer({ min: 0, max: 30 }),
      order: fc.option(
        fc.oneof(fc.integer({ min: -5, max: 40 }), fc.bigInt({ min: 2n ** 60n, max: 2n ** 60n + 40n })),
      ),
    });
    fc.assert(
      fc.property(
        fc.constantFrom(1, 3, 8, 40),
        fc.array(op, { maxLength: 120 }),
        fc.array(op, { maxLength: 60 }),
        (capacity, before, after) => {
          const w = new SignatureWindow({ capacity });
          for (const o of before) w.admit(`s${o.sig}`, o.order ?? undefined);
          const saved = JSON.parse(JSON.stringify(w.toJSON())) as unknown;
          const copy = SignatureWindow.from(saved, { capacity });
          expect(copy.toJSON()).toEqual(w.toJSON());
          expect(copy.horizon).toBe(w.horizon);
          for (const o of after) {
            expect(copy.admit(`s${o.sig}`, o.order ?? undefined)).toBe(
              w.admit(`s${o.sig}`, o.order ?? undefined),
            );
          }
          expect(copy.toJSON()).toEqual(w.toJSON());
        },
      ),
    );
  });

  it('keeps a stale answer across a save', () => {
    const w = new SignatureWindow({ capacity: 1 });
    w.admit('a', 7);
    w.admit('b', 8);
    const copy = SignatureWindow.from(JSON.parse(JSON.stringify(w)), { capacity: 1 });
    expect(copy.admit('a', 7)).toBe('stale');
  });

  it('reads the current format without `orders`', () => {
    const w = SignatureWindow.from(
      { format: 'onceflow.window.v1', signatures: ['a', 'b'], horizon: null },
      { capacity: 4 },
    );
    expect(w.signatures()).toEqual(['a', 'b']);
    expect(w.toJSON().orders).toEqual([null, null]);
  });

  it('reads a plain array, oldest first', () => {
    const w = SignatureWindow.from(['a', 'b', 'c', 'd'], { capacity: 4 });
    expect(w.signatures()).toEqual(['a', 'b', 'c', 'd']);
    expect(w.admit('d')).toBe('duplicate');
    w.admit('e');
    expect(w.signatures()).toEqual(['b', 'c', 'd', 'e']); // a was the oldest
  });

  it('keeps the first position of a signature saved twice', () => {
    const w = SignatureWindow.from(['a', 'b', 'a', 'c'], { capacity: 4 });
    expect(w.signatures()).toEqual(['a', 'b', 'c']);
  });

  it('reads an object keyed exactly "1".."n" in numeric order, whatever the insertion order', () => {
    const n = 12;
    const sigs = Array.from({ length: n }, (_, i) => `sig-${i + 1}`);
    fc.assert(
      fc.property(
        fc.shuffledSubarray(
          sigs.map((_, i) => i + 1),
          { minLength: n, maxLength: n },
        ),
        (keys) => {
          const saved: Record<string, string> = {};
          for (const k of keys) saved[String(k)] = `sig-${k}`;
          const w = SignatureWindow.from(saved, { capacity: n });
          // Lexical order would give sig-1, sig-10, sig-11, sig-12, sig-2, ...
          expect(w.signatures()).toEqual(sigs);
          w.admit('new');
          expect(w.has('sig-1')).toBe(false);
          expect(w.has('sig-2')).toBe(true);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('reads an object with keys that are not exactly "1".."n" as a legacy map', () => {
    expect(SignatureWindow.from({ 1: 'x', 2: 'y', 4: 'z' }, { capacity: 5 }).signatures()).toEqual([
      '1',
      '2',
      '4',
    ]);
    expect(SignatureWindow.from({ 0: 'x', 1: 'y' }, { capacity: 5 }).signatures()).toEqual(['0', '1']);
    expect(SignatureWindow.from({ '01': 'x' }, { capacity: 5 }).signatures()).toEqual(['01']);
  });

  it('reads a legacy map by its keys, in sorted key order, values ignored (TSDoc example)', () => {
    const legacy = { 'v1|room=a|round=1|net=5|final=true': 1700000000 };
    const w = SignatureWindow.from(legacy, { capacity: 4 });
    expect(w.admit('v1|room=a|round=1|net=5|final=true')).toBe('duplicate');

    const map = SignatureWindow.from({ c: 1, a: null, b: { at: 3 } }, { capacity: 4 });
    expect(map.signatures()).toEqual(['a', 'b', 'c']);
    expect(SignatureWindow.from({}, { capacity: 4 }).size).toBe(0);
  });

  it('reads a legacy map the same way for any insertion order (property)', () => {
    const key = fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k !== 'format');
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { minLength: 1, maxLength: 20 }),
        fc.array(fc.integer(), { minLength: 20, maxLength: 20 }),
        fc.constantFrom(2, 5, 40),
        (keys, shuffle, capacity) => {
          fc.pre(!keys.every((k, _i) => /^[1-9]\d*$/.test(k) && Number(k) <= keys.length));
          const shuffled = keys
            .map((k, i) => [k, shuffle[i] ?? 0] as const)
            .sort((a, b) => a[1] - b[1])
            .map(([k]) => k);
          const a = SignatureWindow.from(Object.fromEntries(keys.map((k) => [k, 1])), { capacity });
          const b = SignatureWindow.from(Object.fromEntries(shuffled.map((k) => [k, 2])), { capacity });
          expect(b.toJSON()).toEqual(a.toJSON());
          expect(a.signatures()).toEqual([...keys].sort());
          // Nothing lost, even over capacity.
          for (const k of keys) expect(a.admit(k)).toBe('duplicate');
        },
      ),
    );
  });

  it('keeps an over-capacity legacy window whole until the next insert, then shrinks oldest first', () => {
    const w = SignatureWindow.from({ f: 1, e: 1, d: 1, c: 1, b: 1, a: 1 }, { capacity: 3 });
    expect(w.size).toBe(6);
    for (const s of ['a', 'b', 'c', 'd', 'e', 'f']) expect(w.admit(s)).toBe('duplicate');
    expect(w.size).toBe(6); // duplicates insert nothing, so nothing shrinks
    expect(w.admit('z')).toBe('fresh');
    expect(w.size).toBe(3);
    expect(w.signatures()).toEqual(['e', 'f', 'z']);
  });

  it('shrinks an over-capacity save by evicting one entry at a time, each moving the horizon', () => {
    const saved = {
      format: 'onceflow.window.v1',
      signatures: ['a', 'b', 'c', 'd', 'e', 'f'],
      orders: ['5', '1', '9', null, '3', '4'],
      horizon: '2',
    };
    const w = SignatureWindow.from(saved, { capacity: 3 });
    expect(w.size).toBe(6);
    expect(w.admit('g', 1)).toBe('stale'); // at/below the saved horizon: no insert, no shrink
    expect(w.size).toBe(6);
    expect(w.admit('h', 100)).toBe('fresh');
    expect(w.signatures()).toEqual(['e', 'f', 'h']);
    expect(w.horizon).toBe(9); // the highest of the evicted a(5), b(1), c(9), d(-)
    expect(w.admit('i', 9)).toBe('stale');
  });

  it('loads an over-capacity window the same for large capacities (Set index)', () => {
    const sigs = Array.from({ length: 100 }, (_, i) => `s${i}`);
    const w = SignatureWindow.from(sigs, { capacity: 40 });
    expect(w.size).toBe(100);
    for (const s of sigs) expect(w.has(s)).toBe(true);
    w.admit('new');
    expect(w.signatures()).toEqual([...sigs.slice(61), 'new']);
    expect(w.has('s60')).toBe(false);
    expect(w.admit('s61')).toBe('duplicate');
  });

  const invalid: [string, unknown][] = [
    ['saved', null],
    ['saved', 5],
    ['saved', 'a,b'],
    ['saved', new Map([['a', 1]])],
    ['saved[2]', ['a', 'b', 7]],
    ['saved[1]', ['a', '']],
    ['saved["3"]', { 1: 'a', 2: 'b', 3: 5 }],
    ['saved[""]', { '': 1, a: 1 }],
    ['saved.signatures', { format: 'onceflow.window.v1', signatures: 'a' }],
    ['saved.signatures[1]', { format: 'onceflow.window.v1', signatures: ['a', null] }],
    ['saved.orders', { format: 'onceflow.window.v1', signatures: ['a'], orders: [] }],
    ['saved.orders', { format: 'onceflow.window.v1', signatures: ['a'], orders: 'x' }],
    ['saved.orders[1]', { format: 'onceflow.window.v1', signatures: ['a', 'b'], orders: [null, 'abc'] }],
    ['saved.orders[0]', { format: 'onceflow.window.v1', signatures: ['a'], orders: [1.5] }],
    ['saved.horizon', { format: 'onceflow.window.v1', signatures: [], orders: [], horizon: '1e3' }],
    // An unknown (newer) format must not be read as a legacy map of its own keys.
    ['saved.format', { format: 'onceflow.window.v2', signatures: ['a'], orders: [null], horizon: null }],
  ];
  it.each(invalid)('throws ERR_INVALID_ARGUMENT naming %s', (path, saved) => {
    const err = thrown(() => SignatureWindow.from(saved, { capacity: 4 }));
    expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message.startsWith(`Expected \`${path}\` to be `)).toBe(true);
    expect((err as { path: string }).path).toBe(path);
  });
});

// ---------------------------------------------------------------------------------------------
// DESIGN §3.2, "When is a capacity enough?": a FIFO window of capacity C never lets a repeat through
// iff, for every signature X, fewer than C distinct other signatures are first seen between X's first
// delivery and X's last repeat.

/** The smallest capacity that lets no repeat of `log` through: 1 + the largest such count. */
function measuredNeed(log: readonly string[]): number {
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  log.forEach((s, i) => {
    if (!first.has(s)) first.set(s, i);
    last.set(s, i);
  });
  let worst = 0;
  for (const [x, f] of first) {
    const l = last.get(x)!;
    let count = 0;
    for (const [y, fy] of first) if (y !== x && fy > f && fy < l) count++;
    worst = Math.max(worst, count);
  }
  return worst + 1;
}

/** Runs `log` through a window; `orders` gives each signature the rank of its first appearance. */
function run(log: readonly string[], capacity: number, withOrders: boolean) {
  const w = new SignatureWindow({ capacity });
  const rank = new Map<string, number>();
  const freshCount = new Map<string, number>();
  const outcomes: AdmitOutcome[] = [];
  for (const s of log) {
    if (!rank.has(s)) rank.set(s, rank.size);
    const outcome = w.admit(s, withOrders ? rank.get(s) : undefined);
    outcomes.push(outcome);
    if (outcome === 'fresh') freshCount.set(s, (freshCount.get(s) ?? 0) + 1);
  }
  const repeatPassed = [...freshCount.values()].some((n) => n > 1);
  return { outcomes, repeatPassed, freshCount, distinct: rank.size };
}

const deliveryLog = fc
  .array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 60 })
  .map((xs) => xs.map((x) => `s${x}`));

describe('SignatureWindow: the capacity rule of §3.2', () => {
  it('lets no repeat through when the measured need is <= C', () => {
    fc.assert(
      fc.property(deliveryLog, fc.nat({ max: 3 }), (log, extra) => {
        const need = measuredNeed(log);
        expect(run(log, need + extra, false).repeatPassed).toBe(false);
      }),
    );
  });

  it('lets some repeat through when the measured need is C + 1', () => {
    fc.assert(
      fc.property(deliveryLog, (log) => {
        const need = measuredNeed(log);
        fc.pre(need >= 2);
        expect(run(log, need - 1, false).repeatPassed).toBe(true);
      }),
    );
  });

  it('holds as an iff for every capacity', () => {
    fc.assert(
      fc.property(deliveryLog, (log) => {
        const need = measuredNeed(log);
        for (let c = 1; c <= 11; c++) expect(run(log, c, false).repeatPassed).toBe(need > c);
      }),
    );
  });

  it('fails safe with orders: never fresh twice, and stale exactly when the capacity is too small', () => {
    fc.assert(
      fc.property(deliveryLog, (log) => {
        const need = measuredNeed(log);
        for (let c = 1; c <= 11; c++) {
          const { outcomes, freshCount, distinct } = run(log, c, true);
          for (const n of freshCount.values()) expect(n).toBe(1); // every first delivery fresh, no repeat
          expect(freshCount.size).toBe(distinct);
          expect(outcomes.includes('stale')).toBe(need > c);
        }
      }),
    );
  });

  it('counts only distinct signatures first seen in between (repeats of others do not count)', () => {
    // x, then y three times, then x again: only one other signature in between.
    const log = ['x', 'y', 'y', 'y', 'x'];
    expect(measuredNeed(log)).toBe(2);
    expect(run(log, 2, false).repeatPassed).toBe(false);
    expect(run(log, 1, false).repeatPassed).toBe(true);
  });
});

// The settlement derivation of §3.2. Each round r settles twice: instant I_r, then final F_r.
// (b) every repeat of a round arrives before the round after next begins (I_{r+2}'s first delivery).
// Strict (a): F_r is first delivered before I_{r+1} (one round open at a time)  -> count <= 3, C = 4.
// Relaxed (a): at most two rounds open at once                                   -> count <= 4, C = 5.
const settlementLog = (maxOpen: 1 | 2) =>
  fc
    .record({
      rounds: fc.integer({ min: 1, max: 8 }),
      choices: fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
      repeats: fc.array(fc.record({ sig: fc.nat({ max: 15 }), at: fc.integer({ min: 1, max: 999 }) }), {
        minLength: 1,
        maxLength: 30,
      }),
    })
    .map(({ rounds, choices, repeats }) => {
      // First deliveries: open the next round (its instant) or close the oldest open one (its final).
      const firsts: string[] = [];
      const open: number[] = [];
      let next = 1;
      let step = 0;
      while (next <= rounds || open.length > 0) {
        // At most `maxOpen` rounds open, and consecutive: round r+2 never opens while round r is
        // open (a final first delivered after I_{r+2} would itself break bound (b)).
        const canOpen =
          next <= rounds && open.length < maxOpen && (open.length === 0 || (open[0] as number) >= next - 1);
        const canClose = open.length > 0;
        const doOpen = canOpen && (!canClose || (choices[step++ % choices.length] ?? true));
        if (doOpen) {
          firsts.push(`I${next}`);
          open.push(next++);
        } else {
          // Under the relaxed rule either open round may close first.
          const pick = open.length > 1 && (choices[step++ % choices.length] ?? false) ? 1 : 0;
          const [r] = open.splice(pick, 1);
          firsts.push(`F${r}`);
        }
      }
      // Times: first deliveries at 0, 1, 2, ...; a repeat between its first delivery and I_{r+2}.
      const timed = firsts.map((sig, i) => ({ sig, t: i }));
      const at = (sig: string) => firsts.indexOf(sig);
      for (const { sig, at: u } of repeats) {
        const target = firsts[sig % firsts.length]!;
        const round = Number(target.slice(1));
        const from = at(target);
        const until = at(`I${round + 2}`) === -1 ? firsts.length : at(`I${round + 2}`);
        // Strictly after the first delivery and strictly before I_{r+2}: (b) holds by construction.
        timed.push({ sig: target, t: from + ((until - from) * u) / 1000 });
      }
      return timed.sort((a, b) => a.t - b.t).map((e) => e.sig);
    });

describe('SignatureWindow: the settlement derivation of §3.2', () => {
  it('needs at most 4 when each final precedes the next instant, and capacity 4 lets no repeat through', () => {
    fc.assert(
      fc.property(settlementLog(1), (log) => {
        expect(measuredNeed(log)).toBeLessThanOrEqual(4);
        expect(run(log, 4, false).repeatPassed).toBe(false);
      }),
    );
  });

  it('reaches 4 exactly: capacity 3 is not enough', () => {
    const log = ['I1', 'F1', 'I2', 'F2', 'I1']; // I1's sibling and the next round's two in between
    expect(measuredNeed(log)).toBe(4);
    expect(run(log, 3, false).repeatPassed).toBe(true);
    expect(run(log, 4, false).repeatPassed).toBe(false);
  });

  it('needs at most 5 with two rounds open at once, and capacity 5 lets no repeat through', () => {
    fc.assert(
      fc.property(settlementLog(2), (log) => {
        expect(measuredNeed(log)).toBeLessThanOrEqual(5);
        expect(run(log, 5, false).repeatPassed).toBe(false);
      }),
    );
  });

  it('reaches 5 with two rounds open: capacity 4 lets a repeat through, or with orders answers stale', () => {
    // F1 lands after I2; I2's repeat then sees F1, I3, F2, F3 first delivered in between.
    const log = ['I1', 'I2', 'F1', 'I3', 'F2', 'F3', 'I2'];
    expect(measuredNeed(log)).toBe(5);
    expect(run(log, 4, false).repeatPassed).toBe(true);
    expect(run(log, 4, true).outcomes.at(-1)).toBe('stale');
    expect(run(log, 5, false).repeatPassed).toBe(false);
  });
});

describe('SignatureWindow: large capacities (Set index) behave like small ones', () => {
  const step = fc.record({
    sig: fc.integer({ min: 0, max: 90 }),
    order: fc.option(fc.oneof(fc.integer({ min: 0, max: 500 }), fc.bigInt({ min: 0n, max: 500n })), {
      freq: 3,
    }),
  });

  it('matches the array model at capacity 40 (and around the threshold) on every step', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(40, 40, 32, 33, 3),
        fc.array(step, { maxLength: 400 }),
        (capacity, steps) => {
          const w = new SignatureWindow({ capacity });
          const model = new ModelWindow(capacity);
          // Each step's answer, size and horizon, collected and asserted once: an expect per step
          // costs more than the window under test.
          const got: unknown[] = [];
          const want: unknown[] = [];
          for (const { sig, order } of steps) {
            const o = order ?? undefined;
            got.push([w.admit(`s${sig}`, o), w.size, w.horizon]);
            want.push([model.admit(`s${sig}`, o), model.entries.length, model.horizon]);
          }
          expect(got).toEqual(want);
          expect(w.signatures()).toEqual(model.entries.map((e) => e.sig));
          const held = Array.from({ length: 91 }, (_, s) => w.has(`s${s}`));
          expect(held).toEqual(
            Array.from({ length: 91 }, (_, s) => model.entries.some((e) => e.sig === `s${s}`)),
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('answers like a capacity-40 model across many evictions (compaction of the index)', () => {
    const w = new SignatureWindow({ capacity: 40 });
    const model = new ModelWindow(40);
    const got: string[] = [];
    const want: string[] = [];
    for (let i = 0; i < 5_000; i++) {
      const sig = `s${(i * 7919) % 97}`;
      got.push(w.admit(sig, i % 500));
      want.push(model.admit(sig, i % 500));
    }
    expect(got).toEqual(want);
    expect(w.signatures()).toEqual(model.entries.map((e) => e.sig));
    expect(w.toJSON().orders).toEqual(model.entries.map((e) => String(e.order)));
  });
});
