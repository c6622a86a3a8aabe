import {
  IN_PROCESS_LIMITER,
  type InProcessLimiter,
  inProcessLimiterOf,
} from '../../src/store/memory/in-process.js';
import type { Store } from '../../src/store/store.js';

/**
 * `store` (an in-process one: the memory store) with its in-process limiter's methods replaced
 * where `over` says: a spy or a fault on the limiter's synchronous path, which wrapStore never
 * passes on. Every other member is the store's own, called on it.
 */
export function inProcessSpy(store: Store, over: Partial<InProcessLimiter>): Store {
  const inner = inProcessLimiterOf(store);
  if (inner === undefined) throw new Error('inProcessSpy: the store has no in-process limiter');
  const limiter: InProcessLimiter = {
    decide: over.decide ?? ((limits, cost, now) => inner.decide(limits, cost, now)),
    decideOne: over.decideOne ?? ((call, cost, now) => inner.decideOne(call, cost, now)),
  };
  return new Proxy(store, {
    get(target, name) {
      if (name === IN_PROCESS_LIMITER) return limiter;
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
