import { describe, expect, it } from 'vitest';
import { isOnceflowError } from '../core/errors.js';
import { createLedger } from '../ledger/ledger.js';
import { createLimiter } from '../limiter/limiter.js';
import { memoryStore } from '../store/memory-store.js';
import { conformance } from './index.js';
import { wrapStore } from './wrap-store.js';

describe('wrapStore', () => {
  it('delegates every member it does not override, with the store as `this`, and hides `undefined` ones', async () => {
    const base = memoryStore();
    let applies = 0;
    const spy = wrapStore(base, {
      ledgerApply: (cmd) => {
        applies++;
        return base.ledgerApply(cmd);
      },
      limiterDecideSync: undefined,
    });
    expect(spy.kind).toBe('memory');
    expect('ledgerApply' in spy).toBe(true);
    expect('ledgerBalances' in spy).toBe(true);
    expect('limiterDecideSync' in spy).toBe(false);
    expect(spy.limiterDecideSync).toBeUndefined();
    const ledger = createLedger({ store: spy, capacity: 4 });
    await ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 3 }, scope: 'r' });
    expect(applies).toBe(1);
    // Reads go to the wrapped store's own (private) state.
    expect(await ledger.balances('p')).toEqual({ coins: 3n });
    expect(await createLedger({ store: base, capacity: 4 }).totals('r')).toEqual({ coins: 3n });
    // Nested wraps work.
    expect(await createLedger({ store: wrapStore(spy, {}), capacity: 4 }).balances('p')).toEqual({
      coins: 3n,
    });
  });

  it('overriding limiterTake alone routes every take through it (the sync fast path is hidden)', async () => {
    const base = memoryStore();
    const failing = wrapStore(base, { limiterTake: () => Promise.reject(new Error('down')) });
    expect('limiterDecideSync' in failing).toBe(false);
    const limiter = createLimiter({
      store: failing,
      algorithm: 'gcra',
      limit: 5,
      window: '1s',
      degraded: 'deny',
    });
    expect((await limiter.take('k')).reason).toBe('degraded-deny');
    // Both given: both kept as given.
    const sync = base.limiterDecideSync;
    const both = wrapStore(base, {
      limiterTake: () => Promise.reject(new Error('down')),
      limiterDecideSync: sync,
    });
    expect(both.limiterDecideSync).toBe(sync);
    expect('limiterDecideOneSync' in both).toBe(false);
    // Overriding limiterDecideSync hides limiterDecideOneSync (the limiter would call it instead).
    const decideOnly = wrapStore(base, { limiterDecideSync: sync });
    expect('limiterDecideOneSync' in decideOnly).toBe(false);
    expect('limiterDecideOneSync' in wrapStore(base, {})).toBe(true);
    const one = base.limiterDecideOneSync;
    expect(wrapStore(base, { limiterDecideSync: sync, limiterDecideOneSync: one }).limiterDecideOneSync).toBe(
      one,
    );
  });

  it('an explicit timeout holds on a memory store that hangs (wrapped): the degraded policy answers', async () => {
    const hanging = wrapStore(memoryStore(), { limiterTake: () => new Promise(() => {}) });
    const limiter = createLimiter({
      store: hanging,
      algorithm: 'gcra',
      limit: 1,
      window: '1s',
      degraded: 'deny',
      timeout: '50ms',
    });
    const started = Date.now();
    const decision = await limiter.take('k');
    expect(decision.reason).toBe('degraded-deny');
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('refuses a missing store, overrides that are not an object, and a member the store does not have', async () => {
    const base = memoryStore();
    const codeOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return isOnceflowError(err, 'ERR_INVALID_ARGUMENT')
          ? ((err as { path?: string }).path ?? 'coded')
          : 'other';
      }
      return 'no error';
    };
    expect(codeOf(() => wrapStore(undefined as never, {}))).not.toBe('no error');
    expect(codeOf(() => wrapStore(base, undefined as never))).not.toBe('no error');
    // A typo would inject nothing: every take would still be answered by the store.
    expect(
      codeOf(() => wrapStore(base, { limiterTak: () => Promise.reject(new Error('down')) } as never)),
    ).not.toBe('no error');
    expect(codeOf(() => wrapStore(base, { limiterTake: undefined }))).toBe('no error');
    // Members of the contract the store lacks may still be given: added, hidden, or given back by
    // a second wrap over one that hid them.
    const noDelete = wrapStore(base, { limiterDelete: undefined, limiterDecideSync: undefined });
    expect('limiterDelete' in noDelete).toBe(false);
    const again = wrapStore(noDelete, {
      limiterDelete: (keys) => base.limiterDelete!(keys),
      limiterDecideSync: undefined,
    });
    expect('limiterDelete' in again).toBe(true);
    expect(codeOf(() => wrapStore(noDelete, { close: async () => {} }))).toBe('no error');
    // The conformance kit needs the store under test: without one it would test a fresh memory store.
    await expect(conformance.run(undefined as never)).rejects.toThrow(/`store`/);
    await expect(conformance.runCase(null as never, conformance.cases[0] as never)).rejects.toThrow(
      /`store`/,
    );
    await expect(conformance.run(base, null as never)).rejects.toThrow(/`options`/);
  });
});
