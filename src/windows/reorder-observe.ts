// An observed reorder buffer's push (see ReorderBufferOptions.observer): the class's own push,
// then its gaps and its result told to the observer. Installed on an observed buffer only.
import type { Emit } from '../core/observer.js';
import type { PushResult } from './reorder-types.js';

/** What {@link observedPush} needs of a buffer: its public fill. */
interface Observed {
  readonly buffered: number;
}

/** `push` of `buffer`, reporting each result (`reorder.gap` per overflow gap, then `reorder.push`). */
export function observedPush<T, B extends Observed>(
  buffer: B,
  push: (this: B, seq: number, item: T, now?: number) => PushResult<T>,
  emit: Emit,
  missing: () => number,
): (seq: number, item: T, now?: number) => PushResult<T> {
  return (seq, item, now) => {
    const r = push.call(buffer, seq, item, now);
    for (const g of r.gaps) emit({ part: 'reorder', type: 'gap', from: g.from, to: g.to, cause: 'overflow' });
    emit({
      part: 'reorder',
      type: 'push',
      outcome: r.outcome,
      released: r.length,
      buffered: buffer.buffered,
      missing: missing(),
    });
    return r;
  };
}
