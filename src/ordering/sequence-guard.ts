import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { isPlainObject, keysOf, knownKeys, nonNegativeInt } from '../core/validate.js';

const GUARD_OPTIONS = keysOf<SequenceGuardOptions>({ next: true });

/** What {@link SequenceGuard.check} decided: `drop` a past number, `process` the current one, `hold` a future one. */
export type GuardDecision = 'process' | 'drop' | 'hold';

/** Options of {@link SequenceGuard}. */
export interface SequenceGuardOptions {
  /** The first sequence number expected. Default 0. */
  next?: number;
}

/**
 * The seeds' monotonic guard, for a **single-writer** sequence domain: a client's message
 * sequence on one connection, a partition's offset, one table's change log.
 *
 * - past (`seq < next`) → `drop`: already processed (a redelivery).
 * - current (`seq == next`) → `process`, and the guard advances.
 * - future (`seq > next`) → `hold`: the caller keeps it until the numbers before it come (a
 *   {@link ReorderBuffer} does that holding, with a bound and a gap timeout).
 *
 * Where it must NOT be used (DESIGN §1 principle 5; seed 000): across writers. Two rooms settling
 * one player, two producers writing one topic, two nodes numbering one user's events: their
 * counters are not one sequence, so "past" means nothing. A settlement from a room whose counter
 * is lower is dropped (money lost); two events sharing one number (an instant and a final
 * settlement of one round) let every repeat of the current number through if "current" is allowed
 * twice. Across writers, use self-contained signatures in a window (`SignatureWindow`, the ledger).
 * Also not for a domain whose numbers may have holes forever: a guard holds behind a hole for
 * good; use a ReorderBuffer with a gap timeout.
 *
 * @example
 * ```ts
 * const guard = new SequenceGuard({ next: 1 });
 * guard.check(1); // 'process'
 * guard.check(1); // 'drop'
 * guard.check(3); // 'hold'
 * guard.check(2); // 'process'
 * guard.next; // 3
 * ```
 */
export class SequenceGuard {
  #next: number;

  constructor(options: SequenceGuardOptions = {}) {
    if (!isPlainObject(options as unknown)) throw new InvalidOptionError('options', 'an object', options);
    knownKeys('', options, GUARD_OPTIONS);
    this.#next = nonNegativeInt('next', options.next ?? 0);
  }

  /** The next sequence number expected. */
  get next(): number {
    return this.#next;
  }

  /** Decides one number; `process` advances the guard. */
  check(seq: number): GuardDecision {
    if (!Number.isSafeInteger(seq) || seq < 0) {
      throw new InvalidArgumentError('seq', 'a non-negative safe integer', seq);
    }
    if (seq < this.#next) return 'drop';
    if (seq > this.#next) return 'hold';
    this.#next = seq + 1;
    return 'process';
  }
}
