import { InvalidArgumentError } from '../core/errors.js';
import { isPlainObject } from '../core/validate.js';
import type { Store } from '../store/store.js';

// Every member of the Store contract (src/store/store.ts, with the ordering and idempotency
// operations it extends): a Record over keyof Store, so the compiler refuses it when a member is added or renamed.
const CONTRACT: Record<keyof Store, true> = {
  kind: true,
  ledgerApply: true,
  ledgerResolve: true,
  ledgerBalances: true,
  ledgerWindow: true,
  ledgerJournal: true,
  ledgerScopeTotals: true,
  limiterTake: true,
  limiterReset: true,
  limiterDelete: true,
  limiterAdjust: true,
  close: true,
  checkpointSave: true,
  checkpointLoad: true,
  versionUpsert: true,
  versionGet: true,
  timestampAdvance: true,
  leaseRenew: true,
  idempotencyBegin: true,
  idempotencyRenew: true,
  idempotencyComplete: true,
  idempotencyRelease: true,
  idempotencyGet: true,
};

/**
 * A store that answers like `store` except where `overrides` says otherwise: for fault injection
 * and spies in tests. The memory store is a class instance, so `{ ...store, ledgerApply }` would
 * copy none of its methods; this delegates every other member to `store` (methods called on it). An
 * override set to `undefined` hides that member. The wrapped store answers as a remote store
 * does: its own `limiterTake` always answers with a promise (a memory store's synchronous answer
 * is not passed on, nor an override's), so a limiter over it treats it as any remote store (block
 * cache, default timeout).
 *
 * @example
 * ```ts
 * const base = memoryStore();
 * let calls = 0;
 * const spy = wrapStore(base, { ledgerApply: (cmd) => (calls++, base.ledgerApply(cmd)) });
 * await createLedger({ store: spy, capacity: 4 }).apply({ owner: 'p', signature: 's', deltas: { coins: 1 } });
 * calls; // 1
 * ```
 */
export function wrapStore(store: Store, given: { [K in keyof Store]?: Store[K] | undefined }): Store {
  if (typeof (store as Partial<Store> | undefined)?.ledgerApply !== 'function') {
    throw new InvalidArgumentError('store', 'a store (with ledgerApply)', store);
  }
  if (!isPlainObject(given)) throw new InvalidArgumentError('overrides', 'an object of store members', given);
  // A name that is no member of the store contract and none of this store's is a typo
  // (`limiterTak`): the fault it was meant to inject would never happen. An optional member the
  // store lacks may be given (a `limiterDelete` to add, a second wrap).
  for (const name of Object.keys(given)) {
    if (!Object.hasOwn(CONTRACT, name) && !(name in store)) {
      throw new InvalidArgumentError('overrides', `members of a store (${name} is not one)`, name);
    }
  }
  const overrides: { [K in keyof Store]?: Store[K] | undefined } = { ...given };
  return new Proxy(store, {
    get(target, name) {
      if (Object.hasOwn(overrides, name)) {
        const given = overrides[name as keyof Store];
        // An override of limiterTake answers with a promise too (a spy that calls the memory
        // store's own answers synchronously), so a limiter sees the wrapped store as remote.
        return name === 'limiterTake' && typeof given === 'function'
          ? asPromise(target, given as NonNullable<Store['limiterTake']>)
          : given;
      }
      // The store itself as `this`: its private fields are not on the proxy.
      const value = Reflect.get(target, name, target);
      if (name === 'limiterTake' && typeof value === 'function') return asPromise(target, value);
      return typeof value === 'function' ? value.bind(target) : value;
    },
    has(target, name) {
      if (Object.hasOwn(overrides, name)) return overrides[name as keyof Store] !== undefined;
      return Reflect.has(target, name);
    },
  });
}

// A store's limiterTake whose answer is always a promise (a rejected one for a throw).
function asPromise(
  target: Store,
  take: NonNullable<Store['limiterTake']>,
): (command: Parameters<NonNullable<Store['limiterTake']>>[0]) => Promise<Awaited<ReturnType<typeof take>>> {
  return (command) => {
    try {
      return Promise.resolve(take.call(target, command));
    } catch (err) {
      return Promise.reject(err);
    }
  };
}
