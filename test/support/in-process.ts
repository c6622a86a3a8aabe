import type { LimiterTakeCommand, LimiterTakeReply } from '../../src/store/limiter.js';
import type { Store } from '../../src/store/store.js';

/**
 * `store` (one that decides in this process: the memory store) with its `limiterTake` answered
 * by `take`, synchronously as the store itself answers: a spy or a fault on the limiter's
 * synchronous path (wrapStore answers with a promise, as a remote store does). `inner` is the
 * store's own take. Every other member is the store's own, called on it.
 */
export function inProcessSpy(
  store: Store,
  take: (command: LimiterTakeCommand, inner: (command: LimiterTakeCommand) => LimiterTakeReply) => unknown,
): Store {
  const own = store.limiterTake;
  if (typeof own !== 'function') throw new Error('inProcessSpy: the store has no limiterTake');
  const inner = (command: LimiterTakeCommand) => own.call(store, command) as LimiterTakeReply;
  const spied = (command: LimiterTakeCommand) => take(command, inner);
  return new Proxy(store, {
    get(target, name) {
      if (name === 'limiterTake') return spied;
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
