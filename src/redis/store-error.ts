import { ErrorCode, isOnceflowError, StoreError, type StoreOutcome } from '../core/errors.js';
import { NotSentError } from './bounded-client.js';

// Replies that say the server did not run the command and may soon: loading its data after a
// restart, busy with a long script, a replica promoted or being promoted, a cluster slot moving
// or down, too few replicas for a write. A script that hits READONLY (written to a replica) fails
// at its first write, before any.
const PASSING_REPLY = /^(LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY|NOREPLICAS)\b/;

// ioredis refuses a command without writing it when the client is not connected and its
// offline queue is off (`enableOfflineQueue: false`), Redis and Cluster alike.
const NOT_QUEUED = /enableOfflineQueue options is false/;

/** True when the client was closed (quit, disconnect): ioredis refuses every command it is given. */
export function isClosedClient(client: object): boolean {
  return (client as { status?: unknown }).status === 'end';
}

/** Whether a call that failed so may have taken effect, and whether trying again may succeed. */
export interface RedisFailure {
  readonly outcome: StoreOutcome;
  readonly retriable: boolean;
}

/**
 * What the failed call did: `read` changes nothing; `write` is one command, which Redis runs
 * whole or not at all; `script` is a Lua script, whose writes before an error stand (Redis does
 * not roll a script back) and, in a batch of entries, whose earlier entries were applied.
 */
export type RedisCallKind = 'read' | 'write' | 'script';

/**
 * What a Redis call's failure says about its effect. `closedBefore`: the client was closed when
 * the command was given to it (checked in the same synchronous run: ioredis refuses it there and
 * never sends it).
 */
export function redisFailure(err: unknown, closedBefore: boolean, kind: RedisCallKind): RedisFailure {
  if (closedBefore) return { outcome: 'not-applied', retriable: false };
  // Held by the store while the client was not connected, never given to it (bounded-client.ts).
  if (err instanceof NotSentError) return { outcome: 'not-applied', retriable: err.retriable };
  // The server refused what an option asks of it (`durability.aof` on a master without an AOF),
  // checked before the script was sent: nothing ran, and the same call fails the same way.
  if (isOnceflowError(err, ErrorCode.INVALID_OPTION)) return { outcome: 'not-applied', retriable: false };
  const unknown: StoreOutcome = kind === 'read' ? 'not-applied' : 'unknown';
  // ioredis's ReplyError: the server answered with an error, so the connection is fine.
  if (err instanceof Error && err.name === 'ReplyError') {
    if (PASSING_REPLY.test(err.message)) return { outcome: 'not-applied', retriable: true };
    return { outcome: kind === 'script' ? 'unknown' : 'not-applied', retriable: false };
  }
  if (err instanceof Error && NOT_QUEUED.test(err.message))
    return { outcome: 'not-applied', retriable: true };
  // Anything else is the connection's: the command was written, or queued to be (ioredis writes
  // what its offline queue holds once it reconnects, and sends again what was in flight when the
  // connection dropped), and then it closed, timed out or ran out of retries. It may have run.
  return { outcome: unknown, retriable: true };
}

/** A StoreError for a failed Redis call, with what {@link redisFailure} says about it. */
export function redisStoreError(
  operation: string,
  err: unknown,
  closedBefore: boolean,
  kind: RedisCallKind,
): StoreError {
  return new StoreError(operation, err, redisFailure(err, closedBefore, kind));
}

/** Runs one call of a store operation; its failure becomes the operation's StoreError. */
export type GuardedCall = <T>(operation: string, fn: () => Promise<T>, kind?: RedisCallKind) => Promise<T>;

/**
 * A {@link GuardedCall} on `client`: a read (the default) or a delete, `kind` saying which, for
 * what its failure may have left (see redisFailure).
 */
export function guardedCalls(client: object): GuardedCall {
  return async (operation, fn, kind = 'read') => {
    const closed = isClosedClient(client);
    try {
      return await fn();
    } catch (err) {
      throw redisStoreError(operation, err, closed, kind);
    }
  };
}
