// Validation of a saved reorder buffer (ReorderBuffer.restore): every field checked before any
// state changes, each error naming the field.
import { InvalidArgumentError } from '../core/errors.js';
import { isPlainObject } from '../core/validate.js';
import type { SavedReorderBuffer } from './reorder-types.js';

/** The format tag of a saved reorder buffer. */
export const SNAPSHOT_FORMAT = 'onceflow.reorder.v1';

/** `saved` as a snapshot a buffer of `capacity` can hold, or a typed error naming what is wrong. */
export function validateSaved<T>(saved: unknown, capacity: number): SavedReorderBuffer<T> {
  if (!isPlainObject(saved) || saved.format !== SNAPSHOT_FORMAT) {
    throw new InvalidArgumentError('saved', `a reorder buffer snapshot (format '${SNAPSHOT_FORMAT}')`, saved);
  }
  const int = (path: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw new InvalidArgumentError(path, 'a non-negative safe integer', v);
    }
    return v;
  };
  const time = (path: string, v: unknown): number => {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new InvalidArgumentError(path, 'a number', v);
    return v;
  };
  // One past the last safe integer once that one was released (push takes seq up to it).
  const next =
    saved.next === Number.MAX_SAFE_INTEGER + 1 ? Number.MAX_SAFE_INTEGER + 1 : int('saved.next', saved.next);
  if (!Array.isArray(saved.buffered))
    throw new InvalidArgumentError('saved.buffered', 'an array', saved.buffered);
  const seen = new Set<number>();
  for (const [i, b] of (saved.buffered as unknown[]).entries()) {
    if (!Array.isArray(b) || b.length !== 3) {
      throw new InvalidArgumentError(`saved.buffered[${i}]`, '[seq, item, at]', b);
    }
    const seq = int(`saved.buffered[${i}][0]`, b[0]);
    if (seq <= next || seq - next >= capacity || seen.has(seq)) {
      throw new InvalidArgumentError(
        `saved.buffered[${i}][0]`,
        `a distinct number in (${next}, ${next + capacity})`,
        seq,
      );
    }
    seen.add(seq);
    time(`saved.buffered[${i}][2]`, b[2]);
  }
  if (!Array.isArray(saved.missing))
    throw new InvalidArgumentError('saved.missing', 'an array', saved.missing);
  let floor = -1;
  for (const [i, m] of (saved.missing as unknown[]).entries()) {
    if (!Array.isArray(m) || m.length !== 3) {
      throw new InvalidArgumentError(`saved.missing[${i}]`, '[from, to, openedAt]', m);
    }
    const from = int(`saved.missing[${i}][0]`, m[0]);
    const to = int(`saved.missing[${i}][1]`, m[1]);
    if (from <= floor || to < from || to >= next) {
      throw new InvalidArgumentError(`saved.missing[${i}]`, 'ascending disjoint ranges below next', m);
    }
    floor = to;
    time(`saved.missing[${i}][2]`, m[2]);
  }
  if (saved.missingHorizon !== null) int('saved.missingHorizon', saved.missingHorizon);
  if (saved.lastNow !== null) time('saved.lastNow', saved.lastNow);
  // Its content is the adaptive timeout's to check (when the buffer is adaptive); its kind here.
  if (saved.adaptive !== null && !isPlainObject(saved.adaptive)) {
    throw new InvalidArgumentError('saved.adaptive', 'null or a saved adaptive timeout', saved.adaptive);
  }
  return saved as unknown as SavedReorderBuffer<T>;
}
