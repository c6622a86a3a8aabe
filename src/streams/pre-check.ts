// A consumer's optional Bloom pre-check in front of the handler (docs/pre-checks.md): an entry
// whose event id (field `i`) the filter never saw runs as without it; one it may have seen asks the
// user's authoritative `seen` read, and only a `true` from that read acks it without the handler.
// A false positive of the filter costs that one read, never a drop or a delay; a false negative (an
// id forgotten by the rotation, a filter not restored) runs the handler as if there were no filter.
import { InvalidOptionError } from '../core/errors.js';
import type { PreCheckOutcome } from '../core/observer.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { MAX_BLOOM_KEY_LENGTH } from '../windows/bloom-filter.js';
import { type SeenFilter, seenFilterOption } from '../windows/seen-filter.js';
import type { Delivery } from './delivery.js';

/** The `preCheck` option of `createStreamConsumer` (the handler path only). */
export interface StreamPreCheck<E = unknown> {
  /**
   * The event ids this consumer's handler completed: `add`ed after each handler run that did not
   * throw. Keep it across restarts with `toJSON()` / `SeenFilter.from`, or fill it from your store.
   */
  filter: SeenFilter;
  /**
   * The authoritative read, asked only when the filter answers "maybe": `true` when the effect of
   * `eventId` is already done (the entry is then acked without the handler, as a duplicate);
   * `false` runs the handler. A throw (or rejection) runs the handler, as a consumer without a
   * pre-check would (its handler is idempotent already: deliveries are at least once), and is
   * reported (`outcome: 'read-failed'`): a failing read never holds an entry back.
   */
  seen: (eventId: string, delivery: Delivery<E>) => boolean | Promise<boolean>;
}

const KEYS = keysOf<StreamPreCheck>({ filter: true, seen: true });

/** The `preCheck` option, checked (`hasLedger`: the ledger path refuses it). */
export function preCheckOption<E>(value: unknown, hasLedger: boolean): StreamPreCheck<E> | undefined {
  if (value === undefined) return undefined;
  if (hasLedger) {
    // The booking script dedups every entry in the same atomic step as its ack: there is no
    // advisory read on that path for a filter to skip.
    throw new InvalidOptionError(
      'preCheck',
      'used with `handler` only (the ledger path dedups in its script)',
      value,
    );
  }
  if (!isPlainObject(value))
    throw new InvalidOptionError('preCheck', 'an object like { filter, seen }', value);
  knownKeys('preCheck', value, KEYS);
  seenFilterOption('preCheck.filter', value.filter, true);
  if (typeof value.seen !== 'function') {
    throw new InvalidOptionError(
      'preCheck.seen',
      'a function (eventId, delivery) => boolean | Promise<boolean>',
      value.seen,
    );
  }
  return value as unknown as StreamPreCheck<E>;
}

/**
 * The event a consumer reports for one pre-check (see docs/observability.md): `read-failed` (with
 * the `error`) when the `seen` read threw and the handler ran.
 */
export interface StreamPreCheckEvent {
  readonly part: 'stream-consumer';
  readonly type: 'pre-check';
  readonly id: string;
  readonly outcome: PreCheckOutcome | 'read-failed';
  readonly error?: unknown;
}

/**
 * Whether `delivery` was handled before, by the pre-check: `false` (run the handler) when it has
 * no event id, an id longer than a filter takes, an id the filter never saw, one the `seen` read
 * denies, or when that read fails; `true` only when the `seen` read says so.
 */
export async function seenBefore<E>(
  check: StreamPreCheck<E>,
  emit: (event: StreamPreCheckEvent) => void,
  delivery: Delivery<E>,
): Promise<boolean> {
  const eventId = delivery.eventId;
  if (eventId === undefined || eventId.length > MAX_BLOOM_KEY_LENGTH) return false;
  if (!check.filter.mightContain(eventId)) {
    emit({ part: 'stream-consumer', type: 'pre-check', id: delivery.id, outcome: 'skipped' });
    return false;
  }
  let seen: boolean;
  try {
    seen = (await check.seen(eventId, delivery)) === true;
  } catch (error) {
    emit({ part: 'stream-consumer', type: 'pre-check', id: delivery.id, outcome: 'read-failed', error });
    return false;
  }
  emit({
    part: 'stream-consumer',
    type: 'pre-check',
    id: delivery.id,
    outcome: seen ? 'read-seen' : 'read-unseen',
  });
  return seen;
}

/** After a handler run that did not throw: the filter learns the event id. */
export function handled<E>(check: StreamPreCheck<E>, delivery: Delivery<E>): void {
  const eventId = delivery.eventId;
  if (eventId !== undefined && eventId.length <= MAX_BLOOM_KEY_LENGTH) check.filter.add(eventId);
}
