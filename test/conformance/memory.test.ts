import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/index.js';
import { conformance, wrapStore } from '../../src/testing/index.js';

describe('conformance: memory store', () => {
  const store = memoryStore();
  for (const c of conformance.cases) {
    it(`${c.name}: ${c.rule}`, async () => {
      const { failures } = await conformance.runCase(store, c);
      expect(failures).toEqual([]);
    });
  }

  it('run() covers every case and reports a broken store', async () => {
    const results = await conformance.run(memoryStore());
    expect(results.map((r) => r.name)).toEqual(conformance.cases.map((c) => c.name));
    expect(results.every((r) => r.failures.length === 0)).toBe(true);

    // A store that forgets duplicates must fail the kit: the kit can fail.
    const base = memoryStore();
    const forgetful = wrapStore(base, {
      ledgerApply: async (cmd: Parameters<typeof base.ledgerApply>[0]) =>
        base.ledgerApply({ ...cmd, signature: `${cmd.signature}#${Math.random()}` }),
    });
    const broken = await conformance.run(forgetful);
    expect(broken.find((r) => r.name === 'fresh-then-duplicate')?.failures.length).toBeGreaterThan(0);
  });

  it('a store numbering journal seqs other than 1, 2, 3... per owner fails the kit', async () => {
    const base = memoryStore();
    // Every seq shifted by 100, consistently (apply, journal and `after`): still increasing, not 1, 2, 3.
    const shifted = wrapStore(base, {
      ledgerApply: async (cmd: Parameters<typeof base.ledgerApply>[0]) => {
        const r = await base.ledgerApply(cmd);
        return r.seq === undefined ? r : { ...r, seq: r.seq + 100 };
      },
      ledgerJournal: async (ledger: string, q: Parameters<typeof base.ledgerJournal>[1]) =>
        (await base.ledgerJournal(ledger, q.after === undefined ? q : { ...q, after: q.after - 100 })).map(
          (e) => ({ ...e, seq: e.seq + 100 }),
        ),
    });
    const results = await conformance.run(shifted);
    expect(results.filter((r) => r.failures.some((f) => f.includes('seq'))).length).toBeGreaterThan(5);
  });
  it('a store whose resolve is broken fails the resolve cases', async () => {
    const failing = async (store: Parameters<typeof conformance.run>[0]) =>
      (await conformance.run(store)).filter((r) => r.failures.length > 0).map((r) => r.name);
    const base = memoryStore();
    const resolveCases = conformance.cases.filter((c) => c.name.startsWith('resolve-')).map((c) => c.name);
    expect(resolveCases.length).toBeGreaterThanOrEqual(4);
    // Never decides: every case that expects applied or duplicate fails.
    const undecided = wrapStore(base, {
      ledgerResolve: async (cmd) => ({
        outcome: 'unknown',
        balances: await base.ledgerBalances(cmd.ledger, cmd.owner),
      }),
    });
    expect(await failing(undecided)).toEqual([
      'resolve-stale-repeat',
      'resolve-stale-new',
      'resolve-not-stale',
    ]);
    // Trusts the window alone (an apply that calls stale unknown): misses the journal's repeats and new entries.
    const windowOnly = wrapStore(base, {
      ledgerResolve: async (cmd) => {
        const r = await base.ledgerApply(cmd);
        return r.outcome === 'stale' ? { outcome: 'unknown', balances: r.balances } : (r as never);
      },
    });
    expect(await failing(windowOnly)).toEqual([
      'resolve-stale-repeat',
      'resolve-stale-new',
      'resolve-not-stale',
    ]);
    // Books whatever the window does not hold, whatever the journal says: a stale repeat applied twice.
    const trusting = wrapStore(base, {
      ledgerResolve: async (cmd) => {
        const r = await base.ledgerApply({ ...cmd, horizon: false });
        return r as never;
      },
    });
    expect(await failing(trusting)).toEqual(
      expect.arrayContaining(['resolve-stale-repeat', 'resolve-stale-new']),
    );
  });
});
