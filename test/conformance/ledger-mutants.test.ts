// Each mutant breaks the ledger operations of a memory store (through wrapStore) in one way a real
// store could get them wrong, the ways that book an entry twice; the ledger suites must fail on
// each, in the cases named. The same stores unbroken pass them, so a failure is the mutation's.
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/index.js';
import type { LedgerApplyCommand, Store } from '../../src/store/index.js';
import { conformance, wrapStore } from '../../src/testing/index.js';

type Overrides = Parameters<typeof wrapStore>[1];
// One round trip to the server between two steps of a store that decides in two.
const roundTrip = () => new Promise((r) => setTimeout(r, 1));

/**
 * Books `cmd` without looking at the window: the second step of a store that checked first. The
 * memory store checks again inside its apply, so the booking goes under a signature of its own
 * (what the race then finds is the balances and the journal holding the entry twice).
 */
let booked = 0;
const bookBlindly = async (base: Store, cmd: LedgerApplyCommand) => {
  const r = await base.ledgerApply({
    ...cmd,
    horizon: false,
    signature: `${cmd.signature}\u0000${++booked}`,
  });
  // Applied: a fresh signature is never a duplicate nor (horizon off) stale.
  return r as Extract<typeof r, { outcome: 'applied' }>;
};

const mutants: { name: string; make: (base: Store) => Overrides; fails: string[] }[] = [
  {
    name: 'ledgerApply checks the window in one step and books in a second (racing repeats are both booked)',
    make: (base) => ({
      async ledgerApply(cmd) {
        const seen = (await base.ledgerWindow(cmd.ledger, cmd.owner)).signatures.includes(cmd.signature);
        await roundTrip();
        const r = await base.ledgerApply(cmd);
        return r.outcome === 'duplicate' && !seen ? bookBlindly(base, cmd) : r;
      },
    }),
    fails: ['concurrent-repeats'],
  },
  {
    name: 'ledgerResolve reads the window and journal in one step and books in a second',
    make: (base) => ({
      async ledgerResolve(cmd) {
        const [window, journal] = await Promise.all([
          base.ledgerWindow(cmd.ledger, cmd.owner),
          base.ledgerJournal(cmd.ledger, { owner: cmd.owner }),
        ]);
        const seen =
          window.signatures.includes(cmd.signature) || journal.some((e) => e.signature === cmd.signature);
        await roundTrip();
        const r = await base.ledgerResolve(cmd);
        return r.outcome === 'duplicate' && !seen ? bookBlindly(base, cmd) : r;
      },
    }),
    fails: ['concurrent-resolves'],
  },
  {
    name: 'ledgerResolve books an entry it cannot prove new (applied where the answer is unknown)',
    make: (base) => ({
      async ledgerResolve(cmd) {
        const r = await base.ledgerResolve(cmd);
        return r.outcome === 'unknown' ? bookBlindly(base, cmd) : r;
      },
    }),
    fails: ['retention-unknown', 'retention-none'],
  },
  {
    name: 'ledgerResolve forgets the orders retention dropped (books an ordered entry at or below them)',
    make: (base) => ({
      async ledgerResolve(cmd) {
        const r = await base.ledgerResolve(cmd);
        return r.outcome === 'unknown' && cmd.order !== undefined ? bookBlindly(base, cmd) : r;
      },
    }),
    fails: ['retention-unknown', 'retention-none'],
  },
  {
    name: 'ledgerResolve forgets that retention dropped an entry without an order',
    make: (base) => ({
      async ledgerResolve(cmd) {
        const r = await base.ledgerResolve(cmd);
        return r.outcome === 'unknown' && cmd.order === undefined ? bookBlindly(base, cmd) : r;
      },
    }),
    fails: ['retention-unknown', 'retention-none'],
  },
  {
    name: 'ledgerApply answers a racing repeat applied without booking it again (a wrong outcome, right balances)',
    make: (base) => {
      const inFlight = new Set<string>();
      return {
        async ledgerApply(cmd) {
          const id = `${cmd.ledger}\n${cmd.owner}\n${cmd.signature}`;
          const racing = inFlight.has(id);
          inFlight.add(id);
          await roundTrip();
          const r = await base.ledgerApply(cmd);
          inFlight.delete(id);
          // Says applied for a repeat that raced the first copy: its caller runs the effect again.
          return racing && r.outcome === 'duplicate' ? { ...r, outcome: 'applied', seq: 0 } : r;
        },
      };
    },
    fails: ['concurrent-repeats'],
  },
];

/** The ledger suites on `make(memoryStore())`, its retention stores made the same way. */
async function failing(make: (base: Store) => Overrides): Promise<string[]> {
  const wrapped = (base: Store) => wrapStore(base, make(base));
  const results = await conformance.run(wrapped(memoryStore()), {
    suites: ['ledger', 'ledger-retention'],
    retention: (n) => wrapped(memoryStore({ journal: { maxEntries: n } })),
    require: true,
  });
  if (process.env['SHOW_MUTANTS']) {
    console.log(results.filter((r) => r.failures.length > 0).map((r) => `${r.name}: ${r.failures[0]}`));
  }
  return results.filter((r) => r.failures.length > 0).map((r) => r.name);
}

describe('the ledger suites catch one broken ledger operation at a time', () => {
  it('the unbroken memory store passes them', async () => {
    expect(await failing(() => ({}))).toEqual([]);
  });

  for (const mutant of mutants) {
    it(mutant.name, async () => {
      // Only the cases named: each mutant passes every sequential case, so the kit catches it by
      // the rule it breaks and nothing else.
      expect(await failing(mutant.make)).toEqual(mutant.fails);
    });
  }
});
