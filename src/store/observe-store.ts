import { InvalidArgumentError } from '../core/errors.js';
import { type Emit, errorName, type Observer, observing } from '../core/observer.js';
import type { Store } from './store.js';

// Every operation of the Store contract with its parameter count: a Record over its methods, so
// the compiler refuses it when one is added or renamed. `kind` is a name, not an operation. The
// count gives each operation a wrapper of that arity: no rest array nor `apply` per call.
const OPERATIONS: Record<Exclude<keyof Store, 'kind'>, Arity> = {
  ledgerApply: 1,
  ledgerResolve: 1,
  ledgerBalances: 2,
  ledgerWindow: 2,
  ledgerJournal: 2,
  ledgerScopeTotals: 2,
  limiterTake: 1,
  limiterReset: 1,
  limiterDelete: 1,
  limiterAdjust: 1,
  close: 0,
  checkpointSave: 3,
  checkpointLoad: 1,
  versionUpsert: 4,
  versionGet: 2,
  timestampAdvance: 2,
  leaseRenew: 4,
  idempotencyBegin: 1,
  idempotencyRenew: 4,
  idempotencyComplete: 5,
  idempotencyRelease: 3,
  idempotencyGet: 2,
};

type Arity = 0 | 1 | 2 | 3 | 4 | 5;

// Node's global `performance` is a lazy getter of globalThis: read once here, not on every call.
const clock = performance;
type Method = (a?: unknown, b?: unknown, c?: unknown, d?: unknown, e?: unknown) => unknown;

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
  checkStore(store);
  if (typeof observer !== 'function')
    throw new InvalidArgumentError('observer', 'a function (event) => void', observer);
  const emit = observing(observer, 'observer') as Emit;
  return timeStore(
    store,
    (kind, operation) => (durationMs, error) =>
      emit(
        error === undefined
          ? { part: 'store', type: 'call', store: kind, operation, durationMs }
          : { part: 'store', type: 'call', store: kind, operation, durationMs, error },
      ),
  );
}

/** Reports one operation's calls: the duration, and the error's code or class name on a failure. */
export type CallReport = (durationMs: number, error: string | undefined) => void;

/** Gives the report of one operation of a store kind, asked once per operation on its first call. */
export type CallReporter = (store: string, operation: string) => CallReport;

/**
 * {@link observeStore} reporting to `reporter` instead of an observer: no event object per call,
 * and the reporter resolves what it updates once per operation (the metrics' series). A report
 * must not throw: it runs inside the store call.
 */
export function timeStore(store: Store, reporter: CallReporter): Store {
  checkStore(store);
  const wrapped = new Map<PropertyKey, unknown>();
  const methodOf = (target: Store, name: PropertyKey, value: unknown): unknown => {
    let fn = wrapped.get(name);
    if (fn === undefined || (fn as { original?: unknown }).original !== value) {
      fn = Object.hasOwn(OPERATIONS, name)
        ? timed(
            target,
            new Timing(target, String(name), reporter),
            value as Method,
            OPERATIONS[name as keyof typeof OPERATIONS],
          )
        : (value as Method).bind(target);
      (fn as { original?: unknown }).original = value;
      wrapped.set(name, fn);
    }
    return fn;
  };
  // Everything but the contract's operations: read on the store itself (its private fields are not
  // on the wrapper), a method bound to it.
  const rest = new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? methodOf(target, name, value) : value;
    },
  });
  // The operations as accessors of a plain object in front of that proxy: a part calls one on every
  // decision (`store.limiterTake(...)`), and a proxy's trap on that path costs as much as the
  // memory store's take itself, where an accessor is inlined. Read again on each access, so a
  // method replaced on the store later is wrapped again.
  const front = Object.create(rest) as Store;
  for (const name of Object.keys(OPERATIONS)) {
    Object.defineProperty(front, name, {
      get() {
        const value = Reflect.get(store, name, store);
        return typeof value === 'function' ? methodOf(store, name, value) : value;
      },
      enumerable: false,
      configurable: false,
    });
  }
  return front;
}

function checkStore(store: Store): void {
  if (typeof (store as Partial<Store> | undefined)?.ledgerApply !== 'function') {
    throw new InvalidArgumentError('store', 'a store (with ledgerApply)', store);
  }
}

/** One operation's timing: what every call of it reports through, shared by its wrapper. */
class Timing {
  readonly #target: Store;
  readonly #operation: string;
  readonly #reporter: CallReporter;
  #report: CallReport | undefined;

  constructor(target: Store, operation: string, reporter: CallReporter) {
    this.#target = target;
    this.#operation = operation;
    this.#reporter = reporter;
  }

  report(started: number, failed: boolean, err?: unknown): void {
    const durationMs = clock.now() - started;
    // Resolved on the operation's first call (a store's `kind` is read-only): kept for the rest.
    this.#report ??= this.#reporter(this.#target.kind, this.#operation);
    this.#report(durationMs, failed ? errorName(err) : undefined);
  }

  /** A throw of the method: reported, then passed on. */
  threw(started: number, err: unknown): never {
    this.report(started, true, err);
    throw err;
  }

  /** The method's answer: a plain value reported now, a promise when it settles. */
  settle(started: number, answer: unknown): unknown {
    if (typeof (answer as Partial<PromiseLike<unknown>> | undefined)?.then !== 'function') {
      this.report(started, false);
      return answer;
    }
    return (answer as PromiseLike<unknown>).then(
      (value) => {
        this.report(started, false);
        return value;
      },
      (err: unknown) => this.threw(started, err),
    );
  }
}

// A wrapper per arity: the contract's parameters passed as themselves (a missing optional one as
// undefined, which a store's parameter reads the same).
function timed(target: Store, t: Timing, method: Method, arity: Arity): Method {
  switch (arity) {
    case 0:
      return () => {
        const s = clock.now();
        let r: unknown;
        try {
          r = method.call(target);
        } catch (err) {
          t.threw(s, err);
        }
        return t.settle(s, r);
      };
    case 1:
      return (a) => {
        const s = clock.now();
        let r: unknown;
        try {
          r = method.call(target, a);
        } catch (err) {
          t.threw(s, err);
        }
        return t.settle(s, r);
      };
    case 2:
      return (a, b) => {
        const s = clock.now();
        let r: unknown;
        try {
          r = method.call(target, a, b);
        } catch (err) {
          t.threw(s, err);
        }
        return t.settle(s, r);
      };
    case 3:
      return (a, b, c) => {
        const s = clock.now();
        let r: unknown;
        try {
          r = method.call(target, a, b, c);
        } catch (err) {
          t.threw(s, err);
        }
        return t.settle(s, r);
      };
    default:
      return (a, b, c, d, e) => {
        const s = clock.now();
        let r: unknown;
        try {
          r = arity === 4 ? method.call(target, a, b, c, d) : method.call(target, a, b, c, d, e);
        } catch (err) {
          t.threw(s, err);
        }
        return t.settle(s, r);
      };
  }
}
