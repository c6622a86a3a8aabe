import { describe, expect, it, vi } from 'vitest';
import { StoreError } from '../core/errors.js';
import type { OnceflowEvent, StoreCallEvent } from '../core/observer.js';
import { createLedger } from '../ledger/ledger.js';
import { createLimiter } from '../limiter/limiter.js';
import { wrapStore } from '../testing/wrap-store.js';
import { memoryStore } from './memory/memory-store.js';
import { observeStore } from './observe-store.js';
import type { Store } from './store.js';

const calls = (seen: OnceflowEvent[]) => seen.filter((e): e is StoreCallEvent => e.part === 'store');

describe('observeStore', () => {
  it('reports each call with the store kind, the operation and a duration', async () => {
    const seen: OnceflowEvent[] = [];
    const store = observeStore(memoryStore(), (e) => seen.push(e));
    const ledger = createLedger({ store, capacity: 4 });
    await ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } });
    await ledger.balances('p');
    const got = calls(seen);
    expect(got.map((e) => [e.store, e.operation])).toEqual([
      ['memory', 'ledgerApply'],
      ['memory', 'ledgerBalances'],
    ]);
    for (const e of got) {
      expect(e.durationMs).toBeGreaterThanOrEqual(0);
      expect(e).not.toHaveProperty('error');
    }
  });

  it('keeps a synchronous answer synchronous', () => {
    const store = observeStore(memoryStore(), () => {});
    const reply = store.limiterTake?.({
      namespace: 'n',
      limits: [],
      cost: 1,
      now: undefined,
      timeoutMs: undefined,
    });
    expect(typeof (reply as { then?: unknown }).then).toBe('undefined');
  });

  it('reports a failure by its code and passes it on unchanged', async () => {
    const seen: OnceflowEvent[] = [];
    const failure = new StoreError('ledgerApply', new Error('down'), { outcome: 'not-applied' });
    const broken = wrapStore(memoryStore(), { ledgerApply: () => Promise.reject(failure) });
    const ledger = createLedger({ store: observeStore(broken, (e) => seen.push(e)), capacity: 4 });
    await expect(ledger.apply({ owner: 'p', signature: 's', deltas: { coins: 1 } })).rejects.toBe(failure);
    expect(calls(seen)).toMatchObject([{ operation: 'ledgerApply', error: 'ERR_STORE' }]);
  });

  it('reports a failed limiterTake by its class and passes the failure on', () => {
    const seen: OnceflowEvent[] = [];
    const thrower = wrapStore(memoryStore(), {
      limiterTake: () => {
        throw new RangeError('bad');
      },
    });
    const store = observeStore(thrower, (e) => seen.push(e));
    // wrapStore turns the throw into a rejection: the wrapper times it as a promise.
    return expect(
      Promise.resolve(
        store.limiterTake?.({ namespace: 'n', limits: [], cost: 1, now: undefined, timeoutMs: undefined }),
      ),
    )
      .rejects.toThrow('bad')
      .then(() => expect(calls(seen)).toMatchObject([{ operation: 'limiterTake', error: 'RangeError' }]));
  });

  it('leaves a limiter deciding in this process, and a throwing observer breaks nothing', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const store = observeStore(memoryStore(), () => {
      throw new Error('observer bug');
    });
    const limiter = createLimiter({ store, algorithm: 'fixed-window', limit: 1, window: '1m' });
    expect((await limiter.take('k')).reason).toBe('allowed');
    expect((await limiter.take('k')).reason).toBe('limited');
    expect(warn).toHaveBeenCalledTimes(1);
    warn.mockRestore();
  });

  it('reads everything else on the store itself: its own methods (private fields), a method replaced later, an operation it lacks', async () => {
    class Extended {
      readonly #secret = 'kept';
      readonly kind = 'extended';
      readonly #inner = memoryStore();
      ledgerApply(c: Parameters<Store['ledgerApply']>[0]) {
        return this.#inner.ledgerApply(c);
      }
      secret(): string {
        return this.#secret;
      }
    }
    const base = new Extended();
    const seen: OnceflowEvent[] = [];
    const store = observeStore(base as unknown as Store, (e) => seen.push(e)) as unknown as Extended & Store;
    expect(store.secret()).toBe('kept');
    expect(store.kind).toBe('extended');
    expect(store.limiterTake).toBeUndefined();
    const ledger = createLedger({ store, capacity: 4 });
    await ledger.apply({ owner: 'p', signature: 's1', deltas: { coins: 1 } });
    // Replaced on the store after wrapping: the new method is the one called, and timed.
    let replaced = 0;
    const original = base.ledgerApply.bind(base);
    base.ledgerApply = (c) => {
      replaced++;
      return original(c);
    };
    await ledger.apply({ owner: 'p', signature: 's2', deltas: { coins: 1 } });
    expect(replaced).toBe(1);
    expect(calls(seen).map((e) => e.operation)).toEqual(['ledgerApply', 'ledgerApply']);
  });

  it('refuses what is not a store or not an observer', () => {
    expect(() => observeStore({} as never, () => {})).toThrow(/store/);
    expect(() => observeStore(memoryStore(), 1 as never)).toThrow(/observer/);
  });
});
