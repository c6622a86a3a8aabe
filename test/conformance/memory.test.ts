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
});
