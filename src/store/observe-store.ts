import { InvalidArgumentError } from '../core/errors.js';
import { type Emit, errorName, type Observer, observing } from '../core/observer.js';
import type { Store } from './store.js';

// Every operation of the Store contract: a Record over its methods, so the compiler refuses it
// when one is added or renamed. `kind` is a name, not an operation.
const OPERATIONS: Record<Exclude<keyof Store, 'kind'>, true> = {
  ledgerApply: true,
  ledgerResolve: true,
  ledgerBalances: true,
  ledgerWindow: true,
  ledgerJournal: true,
  ledgerScopeTotals: true,
  limiterTake: true,
  limiterReset: true,
  limiterDelete: true,
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
};

/**
 * A store that answers exactly as `store` does and reports every contract call to `observer` as
 * a `{ part: 'store', type: 'call', store, operation, durationMs, error? }` event: the duration on
 * the monotonic clock (`performance.now()`), the error's code or class name on a failure. A
 * synchronous answer stays synchronous (the memory store's `limiterTake`), so a limiter over it
 * still decides in this process. Only the parts given this store are timed: the store itself is
 * untouched, and an unwrapped store pays nothing.
 *
 * @example
 * ```ts
 * const seen: string[] = [];
 * const store = observeStore(memoryStore(), (e) => { if (e.part === 'store') seen.push(e.operation); });
 * await createLedger({ store, capacity: 4 }).apply({ owner: 'p', signature: 's', deltas: { coins: 1 } });
 * seen; // ['ledgerApply']
 * ```
 */
export function observeStore(store: Store, observer: Observer): Store {
  if (typeof (store as Partial<Store> | undefined)?.ledgerApply !== 'function') {
    throw new InvalidArgumentError('store', 'a store (with ledgerApply)', store);
  }
  if (typeof observer !== 'function')
    throw new InvalidArgumentError('observer', 'a function (event) => void', observer);
  const emit = observing(observer, 'observer') as Emit;
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, name) {
      // The store itself as `this`: its private fields are not on the proxy.
      const value = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      let fn = wrapped.get(name);
      if (fn === undefined || (fn as { original?: unknown }).original !== value) {
        fn = Object.hasOwn(OPERATIONS, name)
          ? timed(target, String(name), value as (...args: unknown[]) => unknown, emit)
          : (value as (...args: unknown[]) => unknown).bind(target);
        (fn as { original?: unknown }).original = value;
        wrapped.set(name, fn);
      }
      return fn;
    },
  });
}

function timed(
  target: Store,
  operation: string,
  method: (...args: unknown[]) => unknown,
  emit: Emit,
): (...args: unknown[]) => unknown {
  const report = (started: number, failed: boolean, err?: unknown): void => {
    const durationMs = performance.now() - started;
    emit(
      failed
        ? { part: 'store', type: 'call', store: target.kind, operation, durationMs, error: errorName(err) }
        : { part: 'store', type: 'call', store: target.kind, operation, durationMs },
    );
  };
  return (...args) => {
    const started = performance.now();
    let answer: unknown;
    try {
      answer = method.apply(target, args);
    } catch (err) {
      report(started, true, err);
      throw err;
    }
    if (typeof (answer as Partial<PromiseLike<unknown>> | undefined)?.then !== 'function') {
      report(started, false);
      return answer;
    }
    return (answer as PromiseLike<unknown>).then(
      (value) => {
        report(started, false);
        return value;
      },
      (err: unknown) => {
        report(started, true, err);
        throw err;
      },
    );
  };
}
