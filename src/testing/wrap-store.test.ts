import { describe, expect, it } from 'vitest';
import { isOnceflowError } from '../core/errors.js';
import { createLedger } from '../ledger/ledger.js';
import { createLimiter } from '../limiter/limiter.js';
import { memoryStore } from '../store/memory/memory-store.js';
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
      limiterDelete: undefined,
    });
    expect(spy.kind).toBe('memory');
    expect('ledgerApply' in spy).toBe(true);
    expect('ledgerBalances' in spy).toBe(true);
    expect('limiterDelete' in spy).toBe(false);
    expect(spy.limiterDelete).toBeUndefined();
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

  it('a wrapped store answers limiterTake with a promise, as a remote store does; an override is called for every take', async () => {
    const base = memoryStore();
    const command = {
      namespace: '|l:wrap',
      limits: [
        { spec: { id: 'x', algorithm: 'gcra', limit: 5, windowMs: 1000, param: 5 } as const, subject: 'k' },
      ],
      cost: 1,
    };
    expect(base.limiterTake?.(command)).not.toBeInstanceOf(Promise);
    expect(wrapStore(base, {}).limiterTake?.(command)).toBeInstanceOf(Promise);
    const failing = wrapStore(base, { limiterTake: () => Promise.reject(new Error('down')) });
    const limiter = createLimiter({
      store: failing,
      algorithm: 'gcra',
      limit: 5,
      window: '1s',
      degraded: 'deny',
    });
    expect((await limiter.take('k')).reason).toBe('degraded-deny');
    // A spy of limiterTake sees every take, with no override of anything else.
    let takes = 0;
    const spied = wrapStore(base, {
      limiterTake: (cmd) => {
        takes++;
        return base.limiterTake!(cmd);
      },
    });
    const counted = createLimiter({
      store: spied,
      algorithm: 'gcra',
      limit: 5,
      window: '1s',
      blockCache: false,
    });
    for (let i = 0; i < 3; i++) await counted.take('k');
    expect(takes).toBe(3);
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
    const noDelete = wrapStore(base, { limiterDelete: undefined, limiterReset: undefined });
    expect('limiterDelete' in noDelete).toBe(false);
    const again = wrapStore(noDelete, {
      limiterDelete: (keys) => base.limiterDelete!(keys),
      limiterReset: undefined,
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
