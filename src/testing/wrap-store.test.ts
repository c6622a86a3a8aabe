import { describe, expect, it } from 'vitest';
import { createLedger } from '../ledger/ledger.js';
import { memoryStore } from '../store/memory-store.js';
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
});
