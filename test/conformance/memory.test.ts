import { expect, it } from 'vitest';
import { memoryStore, StoreError } from '../../src/index.js';
import { conformance, wrapStore } from '../../src/testing/index.js';
import { conformanceSuite, outageConformance } from '../support/model-suites/conformance.js';

// The memory store's retention bounds a whole ledger; each retention case books for one owner.
const retention = (n: number) => memoryStore({ journal: { maxEntries: n } });

conformanceSuite({ label: 'memory store', store: memoryStore(), retention }, () => {
  it('limiter-outage: a store that fails while cut off charges nothing afterwards', async () => {
    const base = memoryStore();
    let down = false;
    const cut = wrapStore(base, {
      limiterTake: (cmd) =>
        down
          ? Promise.reject(new StoreError('limiterTake', new Error('unreachable')))
          : base.limiterTake!(cmd),
    });
    await outageConformance(cut, { begin: () => void (down = true), end: () => void (down = false) });
  });

  it('run() covers every case of every suite and reports a broken store', async () => {
    const results = await conformance.run(memoryStore());
    expect(results.map((r) => `${r.suite}/${r.name}`)).toEqual(
      conformance.suites.flatMap((s) => s.cases.map((c) => `${s.name}/${c.name}`)),
    );
    expect(results.every((r) => r.failures.length === 0)).toBe(true);
    // Without an outage hook or a retention, those suites did not run, and say why.
    expect(results.filter((r) => r.unsupported !== undefined).map((r) => [r.suite, r.unsupported])).toEqual([
      ...conformance.retentionCases.map(() => ['ledger-retention', ['options.retention']]),
      ['limiter-outage', ['options.outage']],
    ]);
    expect(results.filter((r) => r.suite === 'ledger').map((r) => r.name)).toEqual(
      conformance.cases.map((c) => c.name),
    );

    // A store that forgets duplicates must fail the kit: the kit can fail.
    const base = memoryStore();
    const forgetful = wrapStore(base, {
      ledgerApply: async (cmd: Parameters<typeof base.ledgerApply>[0]) =>
        base.ledgerApply({ ...cmd, signature: `${cmd.signature}#${Math.random()}` }),
    });
    const broken = await conformance.run(forgetful, { suites: ['ledger'] });
    expect(broken.find((r) => r.name === 'fresh-then-duplicate')?.failures.length).toBeGreaterThan(0);
  });

  it('a store without the optional operations: those suites are unsupported, or failed when required', async () => {
    const base = memoryStore();
    const ledgerOnly = wrapStore(base, {
      limiterTake: undefined,
      limiterDelete: undefined,
      limiterReset: undefined,
      versionUpsert: undefined,
      checkpointSave: undefined,
      leaseRenew: undefined,
      idempotencyBegin: undefined,
    });
    const results = await conformance.run(ledgerOnly);
    expect(results.every((r) => r.failures.length === 0)).toBe(true);
    const unsupported = new Set(results.filter((r) => r.unsupported).map((r) => r.suite));
    expect([...unsupported]).toEqual([
      'ledger-retention',
      'limiter',
      'limiter-state',
      'limiter-outage',
      'limiter-adjust',
      'version-gate',
      'checkpoint',
      'snowflake-clock',
      'idempotency',
      'idempotency-get',
    ]);
    const required = await conformance.run(ledgerOnly, {
      suites: ['ledger', 'version-gate'],
      require: ['version-gate'],
    });
    expect(required.filter((r) => r.suite === 'ledger').every((r) => r.failures.length === 0)).toBe(true);
    const gate = required.filter((r) => r.suite === 'version-gate');
    expect(gate.length).toBeGreaterThan(0);
    for (const r of gate) expect(r.failures).toEqual(['required, but the store has no versionUpsert']);
    // Misspelt suites would run nothing: refused.
    await expect(conformance.run(base, { suites: ['limiters' as never] })).rejects.toThrow(/options\.suites/);
    await expect(conformance.run(base, { outage: {} as never })).rejects.toThrow(/options\.outage/);
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
    const results = await conformance.run(shifted, { suites: ['ledger'] });
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
      'concurrent-resolves',
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
      'concurrent-resolves',
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
