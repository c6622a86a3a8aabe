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
});
