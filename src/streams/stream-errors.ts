import { isOnceflowError, type StoreOutcome } from '../core/errors.js';
import { NotSentError } from '../redis/bounded-client.js';
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
 * ...), `connection` (closed, reset, timed out, not connected), `not-replicated` (a durable write
 * the master made that too few replicas confirmed in time: `durability`), `invalid-option` (a
 * setting the server refuses, such as `durability.aof` without appendonly), or `closed-client`.
 *
 * `outcome`: whether the call may have taken effect. `'not-applied'`: it certainly did not (never
 * sent: the client was not connected within the wait, or was closed; or the server refused it
 * before running it); `'unknown'`: it may have (sent and no reply came, or a script failed part
 * way, or the master wrote it and too few replicas confirmed it).
 */
export interface StreamFailure {
  readonly retryable: boolean;
  readonly kind: string;
  readonly outcome: StoreOutcome;
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
 * classifyStreamError(reply('LOADING Redis is loading the dataset in memory')); // { retryable: true, kind: 'LOADING', outcome: 'not-applied' }
 * classifyStreamError(reply('WRONGTYPE Operation against a key holding the wrong kind of value')); // { retryable: false, kind: 'WRONGTYPE', outcome: 'unknown' }
 * classifyStreamError(new Error('Connection is closed.')); // { retryable: true, kind: 'connection', outcome: 'unknown' }
 * ```
 */
export function classifyStreamError(err: unknown, closedClient = false): StreamFailure {
  if (closedClient) return { retryable: false, kind: 'closed-client', outcome: 'not-applied' };
  if (isOnceflowError(err, 'ERR_STORE')) {
    const inner = classifyStreamError(err.cause);
    return { retryable: err.retriable, kind: inner.kind, outcome: err.outcome };
  }
  // The master ran the write and answered; too few replicas confirmed it within the wait. The
  // same call again is answered as it was (a duplicate) once they catch up: retryable.
  if (isOnceflowError(err, 'ERR_NOT_REPLICATED'))
    return { retryable: true, kind: 'not-replicated', outcome: 'unknown' };
  // A setting the server refuses (`durability.aof` on a master without appendonly): checked before
  // any write, and no try can succeed until the server changes.
  if (isOnceflowError(err, 'ERR_INVALID_OPTION'))
    return { retryable: false, kind: 'invalid-option', outcome: 'not-applied' };
  const { retriable, outcome } = redisFailure(err, false, 'script');
  // Closed while the command waited for a connection: refused unsent, as a closed client's are.
  if (err instanceof NotSentError && !err.retriable)
    return { retryable: false, kind: 'closed-client', outcome };
  if (err instanceof Error && err.name === 'ReplyError') {
    const kind = CODE.exec(err.message)?.[1] ?? 'ERR';
    return { retryable: retriable, kind, outcome };
  }
  return { retryable: retriable, kind: 'connection', outcome };
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
