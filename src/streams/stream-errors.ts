import { isOnceflowError } from '../core/errors.js';
import { redisFailure } from '../redis/store-error.js';

/**
 * What a failed stream call says about trying again:
 * - `retryable`: the failure passes (a lost connection, a timeout, a server loading, busy, failing
 *   over or moving a slot): the same call, after a wait, may succeed.
 * - `terminal`: it fails the same way until someone fixes the cause (a key of the wrong type, a
 *   missing permission or password, a full memory, a script error, a closed client): trying again
 *   only delays the dead letter.
 *
 * `kind` names the cause for logs and dead letters: the Redis error code (`WRONGTYPE`, `LOADING`,
 * ...), `connection` (closed, reset, timed out, not connected), or `closed-client`.
 */
export interface StreamFailure {
  readonly retryable: boolean;
  readonly kind: string;
}

// MOVED and ASK are answered by a cluster client itself (it follows them); one that reaches the
// caller comes from a standalone client pointed at a cluster node, which retrying never fixes.
// OOM: maxmemory is reached with a noeviction policy; it lasts until someone frees memory or
// raises the limit, and a producer retrying at full speed would only add load: terminal, so the
// event goes to the dead letter with the reason (on a server with memory to spare).
const CODE = /^([A-Z][A-Z_-]+)\b/;

/**
 * Classifies a failed Redis call of a stream producer or consumer. It builds on
 * {@link redisFailure} (the store's classification, shared so both stay one rule): every reply
 * it calls passing (LOADING, BUSY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, READONLY, NOREPLICAS) and
 * every connection failure are retryable; every other server reply (WRONGTYPE, NOPERM, NOAUTH,
 * OOM, ERR ... of a script, MOVED/ASK reaching the caller) and a closed client are terminal.
 * A StoreError keeps the `retriable` its store gave it.
 *
 * @example
 * ```ts
 * import { classifyStreamError } from 'onceflow/streams';
 * const reply = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });
 * classifyStreamError(reply('LOADING Redis is loading the dataset in memory')); // { retryable: true, kind: 'LOADING' }
 * classifyStreamError(reply('WRONGTYPE Operation against a key holding the wrong kind of value')); // { retryable: false, kind: 'WRONGTYPE' }
 * classifyStreamError(new Error('Connection is closed.')); // { retryable: true, kind: 'connection' }
 * ```
 */
export function classifyStreamError(err: unknown, closedClient = false): StreamFailure {
  if (closedClient) return { retryable: false, kind: 'closed-client' };
  if (isOnceflowError(err, 'ERR_STORE')) {
    const inner = classifyStreamError(err.cause);
    return { retryable: err.retriable, kind: inner.kind };
  }
  const { retriable } = redisFailure(err, false, 'script');
  if (err instanceof Error && err.name === 'ReplyError') {
    const kind = CODE.exec(err.message)?.[1] ?? 'ERR';
    return { retryable: retriable, kind };
  }
  return { retryable: retriable, kind: 'connection' };
}

/** The message of a failure, for logs and dead letters (a non-Error as its string). */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return String(err);
  } catch {
    return Object.prototype.toString.call(err);
  }
}
