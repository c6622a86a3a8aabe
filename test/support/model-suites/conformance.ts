// The conformance kit's per-store run, written once: one test per case of every suite, and the
// limiter-outage suite behind the hook a binding gives (a cut proxy, a crashed server, a wrapped
// store), since only the binding knows how to cut its store off.
import { describe, expect, it } from 'vitest';
import type { Store } from '../../../src/store/store.js';
import { conformance } from '../../../src/testing/index.js';

type RunResults = Awaited<ReturnType<typeof conformance.run>>;
type Outage = NonNullable<NonNullable<Parameters<typeof conformance.run>[1]>['outage']>;

export interface ConformanceTarget {
  /** Names the store in test titles, e.g. `Redis store (cluster)`. */
  readonly label: string;
  readonly store: Store;
  /** The same kind of store keeping the newest `n` journal entries (for `ledger-retention`). */
  retention(n: number): Store;
  /** Key prefix of the kit's names on a shared server (default: the kit's random one). */
  readonly prefix?: string;
}

/** One test per case of every suite except limiter-outage (see {@link outageConformance}). */
export function conformanceSuite(target: ConformanceTarget, extra?: () => void): void {
  describe(`conformance: ${target.label}`, () => {
    const options = {
      require: true as const,
      retention: (n: number) => target.retention(n),
      ...(target.prefix !== undefined && { prefix: target.prefix }),
    };
    for (const suite of conformance.suites) {
      if (suite.needs === 'outage') continue; // needs a way to cut the store off: outageConformance
      for (const c of suite.cases) {
        it(`${suite.name}: ${c.name}: ${c.rule}`, async () => {
          const result = await conformance.runCase(target.store, c, options);
          expect(result.failures).toEqual([]);
          expect(result.unsupported).toBeUndefined();
        });
      }
    }
    extra?.();
  });
}

/**
 * Runs the limiter-outage suite on `store` with `outage` cutting it off and bringing it back;
 * every case must pass. Resolves to the results, for what a binding counts (crashes, cut
 * connections).
 */
export async function outageConformance(store: Store, outage: Outage): Promise<RunResults> {
  const results = await conformance.run(store, { suites: ['limiter-outage'], outage, require: true });
  expect(results.length).toBeGreaterThan(0);
  expect(results.flatMap((r) => r.failures)).toEqual([]);
  return results;
}
