// A model of `Ledger.resolve` for property tests: random deliveries (repeats, late entries, with
// and without orders) on a small window and a small journal, every `stale` answer resolved (at
// once or at the end), checked against the truth (which signatures were applied, how often) and
// against the journal model (what retention kept and dropped, per owner or per ledger).
import fc from 'fast-check';
import { expect } from 'vitest';
import type { Order } from '../../src/core/validate.js';
import { createLedger, type LedgerEntry } from '../../src/ledger/ledger.js';
import type { Store } from '../../src/store/store.js';

export interface Delivery {
  owner: string;
  event: number;
  /** Resolve it (instead of applying it); an apply answered `stale` is resolved at once when `now`. */
  resolve: boolean;
  now: boolean;
}

export interface Scenario {
  capacity: number;
  /** Journal entries kept (per owner or per ledger, as the store keeps them); undefined: all. */
  keep: number | undefined;
  /** Each event's order (undefined: none); an event's signature always carries the same one. */
  orders: (number | undefined)[];
  deliveries: Delivery[];
}

const EVENTS = 10;

export function scenarios(owners: readonly string[]): fc.Arbitrary<Scenario> {
  return fc.record({
    capacity: fc.integer({ min: 1, max: 3 }),
    keep: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
    // Mostly ordered, some not; repeats of one order across events too.
    orders: fc.array(fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined, freq: 4 }), {
      minLength: EVENTS,
      maxLength: EVENTS,
    }),
    deliveries: fc.array(
      fc.record({
        owner: fc.constantFrom(...owners),
        event: fc.integer({ min: 0, max: EVENTS - 1 }),
        // One delivery in ten is resolved rather than applied: resolve of entries that are not stale.
        resolve: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
        now: fc.boolean(),
      }),
      { minLength: 20, maxLength: 60 },
    ),
  });
}

/** What the run answered, in order, and the end state: equal on every store for one scenario. */
export interface Trace {
  outcomes: string[];
  balances: Record<string, Record<string, bigint>>;
  journals: Record<string, string[]>;
  stale: number;
  /** How many resolves answered each outcome. */
  resolved: Record<string, number>;
}

/**
 * Runs `s` on `store` (a fresh ledger named `name`), asserting every resolve against the model;
 * `perOwner` says how the store's retention counts (Redis: per owner; memory: per ledger).
 */
export async function runScenario(
  store: Store,
  name: string,
  s: Scenario,
  perOwner: boolean,
): Promise<Trace> {
  const ledger = createLedger({ store, capacity: s.capacity, name });
  const entry = (owner: string, event: number): LedgerEntry => {
    const e: LedgerEntry = { owner, signature: `e${event}`, deltas: { coins: event + 1 } };
    const order = s.orders[event];
    if (order !== undefined) e.order = order;
    return e;
  };
  // The truth: every booking, in order (the full journal), and how often each signature was booked.
  const booked: { owner: string; signature: string; order: Order | undefined }[] = [];
  const times = new Map<string, number>();
  const outcomes: string[] = [];
  const deferred: LedgerEntry[] = [];
  let stale = 0;
  const resolved: Record<string, number> = { applied: 0, duplicate: 0, unknown: 0 };
  const book = (e: LedgerEntry) => {
    booked.push({ owner: e.owner, signature: e.signature, order: e.order });
    times.set(`${e.owner}\u0000${e.signature}`, (times.get(`${e.owner}\u0000${e.signature}`) ?? 0) + 1);
  };
  const retained = (owner: string) => {
    const keep = s.keep ?? Number.POSITIVE_INFINITY;
    const mine = (list: typeof booked) => list.filter((b) => b.owner === owner);
    if (perOwner) {
      const all = mine(booked);
      const kept = keep === 0 ? [] : all.slice(-keep);
      return { kept, dropped: all.slice(0, all.length - kept.length) };
    }
    const keptAll = keep === 0 ? [] : booked.slice(-keep);
    return { kept: mine(keptAll), dropped: mine(booked.slice(0, booked.length - keptAll.length)) };
  };

  const resolve = async (e: LedgerEntry) => {
    const before = await ledger.balances(e.owner);
    const window = (await ledger.window(e.owner)).signatures;
    const { kept, dropped } = retained(e.owner);
    expect((await ledger.journal({ owner: e.owner })).map((j) => j.signature)).toEqual(
      kept.map((k) => k.signature),
    );
    const count = times.get(`${e.owner}\u0000${e.signature}`) ?? 0;
    const r = await ledger.resolve(e);
    outcomes.push(`resolve ${e.owner} ${e.signature}: ${r.outcome}`);
    resolved[r.outcome] = (resolved[r.outcome] ?? 0) + 1;
    // Safety: applied only what was never booked; a duplicate only what was.
    if (r.outcome === 'applied') expect(count).toBe(0);
    if (r.outcome === 'duplicate') expect(count).toBeGreaterThan(0);
    if (r.outcome !== 'applied') expect(r.balances).toEqual(before);
    // Completeness: exactly what the window, the retained journal and the dropped orders prove.
    let want: string;
    if (window.includes(e.signature) || kept.some((k) => k.signature === e.signature)) want = 'duplicate';
    else if (dropped.length === 0) want = 'applied';
    // A store keeping no journal proves nothing new once the owner booked an entry.
    else if (s.keep === 0) want = 'unknown';
    else if (e.order === undefined) want = dropped.some((d) => d.order === undefined) ? 'unknown' : 'applied';
    else
      want = dropped.every((d) => d.order === undefined || d.order < (e.order as Order))
        ? 'applied'
        : 'unknown';
    expect(r.outcome).toBe(want);
    if (r.outcome === 'applied') book(e);
  };

  for (const d of s.deliveries) {
    const e = entry(d.owner, d.event);
    if (d.resolve) {
      await resolve(e);
      continue;
    }
    const r = await ledger.apply(e);
    outcomes.push(`apply ${e.owner} ${e.signature}: ${r.outcome}`);
    if (r.outcome === 'applied') book(e);
    if (r.outcome === 'stale') {
      stale++;
      if (d.now) await resolve(e);
      else deferred.push(e);
    }
  }
  for (const e of deferred) await resolve(e);

  const owners = [...new Set(s.deliveries.map((d) => d.owner))].sort();
  const balances: Trace['balances'] = {};
  const journals: Trace['journals'] = {};
  for (const owner of owners) {
    balances[owner] = await ledger.balances(owner);
    journals[owner] = (await ledger.journal({ owner })).map((j) => j.signature);
    // The balances are the truth's: every booking counted once, whoever booked it.
    const sum = booked
      .filter((b) => b.owner === owner)
      .reduce((t, b) => t + BigInt(Number(b.signature.slice(1)) + 1), 0n);
    expect(balances[owner]).toEqual(
      sum === 0n && !booked.some((b) => b.owner === owner) ? {} : { coins: sum },
    );
  }
  return { outcomes, balances, journals, stale, resolved };
}
