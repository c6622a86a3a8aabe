// The limiter model suite (test/support/model-suites/limiter.ts) on PostgreSQL, and the store
// contract straight (no limiter in between) against the memory store.
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { FakeClock, memoryStore } from '../../src/index.js';
import { createPostgresStore } from '../../src/postgres/index.js';
import type { LimitCall } from '../../src/store/limiter.js';
import type { Store } from '../../src/store/store.js';
import type { LimitSpec } from '../../src/windows/limits/types.js';
import { limiterModelSuite } from '../support/model-suites/limiter.js';
import { limiterAdjustModelSuite } from '../support/model-suites/limiter-adjust.js';
import { testSchema } from './pg-env.js';

const { pool, schema } = testSchema('lim_model');
const store = createPostgresStore({ pool, schema });
let run = 0;

limiterAdjustModelSuite({ label: 'PostgreSQL', store: () => store, inCallOrder: false });

// Takes run on separate pool connections and race: no call order is promised.
limiterModelSuite({ label: 'PostgreSQL', store: () => store, inCallOrder: false }, () => {
  it('store replies equal the memory store for multi-limit commands at and around window edges', async () => {
    // Straight at the Store contract (no limiter in between): explicit `now`, specs built by
    // hand, costs up to 2^53 - 1 (a cost no limit admits must not overflow the SQL math).
    const specs: LimitSpec[] = [
      { id: 'f', algorithm: 'fixed-window', limit: 5, windowMs: 1000, param: 0 },
      { id: 'w', algorithm: 'sliding-window', limit: 7, windowMs: 1000, param: 250 },
      { id: 'g', algorithm: 'gcra', limit: 3, windowMs: 1000, param: 4 },
      { id: 'd', algorithm: 'sliding-log', limit: 6, windowMs: 1000, param: 0 },
    ];
    const edge = fc.constantFrom(0, 1, 249, 250, 251, 999, 1000, 1001, -1, -250);
    const cmd = fc.record({
      advance: fc.oneof(edge, fc.integer({ min: 0, max: 2000 })),
      cost: fc.oneof(fc.integer({ min: 0, max: 5 }), fc.constant(Number.MAX_SAFE_INTEGER)),
      pick: fc.subarray([0, 1, 2, 3], { minLength: 1 }),
      subject: fc.constantFrom('s', 't'),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 40 }), async (seq) => {
        const memory = memoryStore({ clock: new FakeClock(0) });
        const memoryTake = memory.limiterTake?.bind(memory) as NonNullable<Store['limiterTake']>;
        const namespace = `|l:direct-${run++}`;
        let now = 10_000_000;
        for (const c of seq) {
          now += c.advance;
          const calls = (): LimitCall[] =>
            c.pick.map((i) => {
              const spec = specs[i] as LimitSpec;
              return { spec, subject: c.subject };
            });
          const command = { namespace, cost: c.cost, now };
          const m = await memoryTake({ ...command, limits: calls() });
          const p = await store.limiterTake({ ...command, limits: calls() });
          expect(p).toEqual(m);
        }
      }),
      { numRuns: 60 },
    );
  });
});
