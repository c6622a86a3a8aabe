import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { runScenario, scenarios } from '../support/resolve-model.js';

describe('Ledger.resolve on the memory store, against the model', () => {
  it('resolving every stale answer never books twice, answers duplicate only for booked entries and unknown only when unprovable (retention per ledger, two owners)', async () => {
    let runs = 0;
    let stale = 0;
    const resolved: Record<string, number> = { applied: 0, duplicate: 0, unknown: 0 };
    await fc.assert(
      fc.asyncProperty(scenarios(['p1', 'p2']), async (s) => {
        const store = memoryStore({ journal: { maxEntries: s.keep ?? Number.POSITIVE_INFINITY } });
        const trace = await runScenario(store, `m${runs++}`, s, false);
        stale += trace.stale;
        for (const [k, v] of Object.entries(trace.resolved)) resolved[k] = (resolved[k] ?? 0) + v;
      }),
      { numRuns: 300 },
    );
    // The property saw stale answers to resolve, and every outcome of resolve, many times.
    expect(stale).toBeGreaterThan(300);
    for (const outcome of ['applied', 'duplicate', 'unknown']) expect(resolved[outcome]).toBeGreaterThan(100);
    console.log('resolve model (memory):', { stale, resolved });
  });
});
