import type { Duration } from '../core/duration.js';
import { InProgressError, InvalidOptionError, PayloadMismatchError } from '../core/errors.js';
import { isPlainObject, knownKeys } from '../core/validate.js';
import { idempotencyOf } from './idempotency.js';
import { IDEMPOTENCY_OPTIONS, type IdempotencyOptions, resolveOptions, waitMs } from './options.js';

/** Options of {@link idempotent}: how to read a call's key (and payload), and those of {@link createIdempotency}. */
export interface IdempotentOptions<A> extends IdempotencyOptions {
  /** The call's key, from its argument (an id, a header, a `defineSignature` of the payload). */
  key: (arg: A) => string;
  /**
   * The payload hashed into the record, from the argument. Default: the argument itself (it
   * must then be JSON-like data: see `hashPayload` to turn hashing off).
   */
  payload?: (arg: A) => unknown;
  /** As {@link RunOptions.wait}, for every call. Default `false`. */
  wait?: boolean | Duration;
}

const IDEMPOTENT_OPTIONS = [...IDEMPOTENCY_OPTIONS, 'key', 'payload', 'wait'];

/**
 * Wraps `fn` so that it runs once per key (see {@link createIdempotency}): the wrapped function
 * resolves `fn`'s value, the recorded one when a call with the key completed before, and rejects
 * with `ERR_IN_PROGRESS` (another caller holds the key: `retryAfterMs`) or `ERR_PAYLOAD_MISMATCH`
 * (the key was used with another payload) where `run` would answer `in-progress` or `mismatch`,
 * and with `fn`'s own error, unchanged, when it throws (the key is released).
 *
 * @example
 * ```ts
 * let sent = 0;
 * const sendReceipt = idempotent(
 *   async (order: { id: string; email: string }) => {
 *     sent++;
 *     return `receipt for ${order.id} sent to ${order.email}`;
 *   },
 *   { key: (order) => `receipt:${order.id}`, ttl: '7d' },
 * );
 * await sendReceipt({ id: 'o1', email: 'ada@example.com' }); // 'receipt for o1 sent to ada@example.com'
 * await sendReceipt({ id: 'o1', email: 'ada@example.com' }); // 'receipt for o1 sent to ada@example.com'
 * sent; // 1
 * ```
 */
export function idempotent<A, T>(
  fn: (arg: A) => T | Promise<T>,
  options: IdempotentOptions<A>,
): (arg: A) => Promise<T> {
  if (typeof fn !== 'function') throw new InvalidOptionError('fn', 'a function', fn);
  if (!isPlainObject(options as unknown)) {
    throw new InvalidOptionError('options', 'an object like { key: (arg) => string }', options);
  }
  knownKeys('', options, IDEMPOTENT_OPTIONS);
  const { key, payload, wait, ...rest } = options;
  if (typeof key !== 'function') throw new InvalidOptionError('key', 'a function (arg) => string', key);
  if (payload !== undefined && typeof payload !== 'function') {
    throw new InvalidOptionError('payload', 'a function (arg) => payload', payload);
  }
  const resolved = resolveOptions(rest);
  const budget = waitMs(wait, resolved.leaseMs, 'wait', 'option');
  const idem = idempotencyOf(resolved);
  return async (arg: A): Promise<T> => {
    const k = key(arg);
    const r = await idem.run<T>(
      { key: k, payload: payload === undefined ? arg : payload(arg) },
      () => fn(arg),
      {
        wait: budget,
      },
    );
    switch (r.outcome) {
      case 'executed':
      case 'replayed':
        return r.value;
      case 'in-progress':
        throw new InProgressError(k, r.retryAfterMs);
      case 'mismatch':
        throw new PayloadMismatchError(k);
    }
  };
}
