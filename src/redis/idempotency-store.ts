import { InvalidArgumentError, StoreError } from '../core/errors.js';
import { isWellFormed, nonEmptyStringArg } from '../core/validate.js';
import type {
  IdempotencyBeginCommand,
  IdempotencyBeginReply,
  IdempotencyStoreOps,
} from '../idempotency/store-ops.js';
import { evalScript, type RedisLike } from './eval.js';
import { escapeId } from './keys.js';
import type { LuaScript } from './scripts.generated.js';
import { scripts } from './scripts.generated.js';
import { isClosedClient, redisStoreError } from './store-error.js';

/** idempotency-begin.lua's reply: outcome, Redis TIME (ms), then what the outcome carries. */
type BeginReply =
  | ['acquired', number, number, 0 | 1]
  | ['completed', number, string]
  | ['in-progress', number, number]
  | ['mismatch', number];

/**
 * The idempotency operations on Redis (DESIGN §3.6): one record per (name, key), one key and one
 * script per operation, so every transition is atomic and lands on one Cluster slot, on Redis
 * `TIME`:
 *
 *   <prefix>{idem:<name>:<key>}:r    hash    s: state ('p' | 'c'), h: payload hash, e: lease or
 *                                            ttl expiry (ms), c: created (ms), d: the holder's
 *                                            token (in progress) or the value (completed)
 *
 * A completed record's key expires (PEXPIRE) at its ttl; an in-progress one a lease after its
 * lease (idempotency-begin.lua says why). Name and key are escaped like every id of the store, so
 * neither can end the hash tag early or imitate another pair.
 *
 * Four scripts rather than one with an operation argument: begin is the hot path and stays a
 * TIME, an HMGET and at most an HSET and a PEXPIRE, with no dispatch; each header names exactly
 * the arguments of its step.
 */
export function redisIdempotencyOps(client: RedisLike, prefix: string): Required<IdempotencyStoreOps> {
  const recordKey = (name: string, key: string) => `${prefix}{idem:${escapeId(name)}:${escapeId(key)}}:r`;

  // One async function per call, no closure per call: begin and complete are the hot path.
  // Every operation is a script whose writes may have landed when its reply is lost (`unknown`).
  async function call(operation: string, script: LuaScript, key: string, args: string[]): Promise<unknown> {
    const closed = isClosedClient(client);
    try {
      return await evalScript(client, script, [key], args);
    } catch (err) {
      throw redisStoreError(operation, err, closed, 'script');
    }
  }

  return {
    async idempotencyBegin(command: IdempotencyBeginCommand): Promise<IdempotencyBeginReply> {
      const key = recordKey(nonEmptyStringArg('name', command.name), nonEmptyStringArg('key', command.key));
      if (typeof command.payloadHash !== 'string' || !isWellFormed(command.payloadHash)) {
        throw new InvalidArgumentError('payloadHash', 'a well-formed string', command.payloadHash);
      }
      const token = nonEmptyStringArg('token', command.token);
      const leaseMs = positiveMs('leaseMs', command.leaseMs);
      const reply = (await call('idempotencyBegin', scripts.idempotencyBegin, key, [
        command.payloadHash,
        token,
        leaseMs,
      ])) as BeginReply;
      switch (reply[0]) {
        case 'acquired':
          return { outcome: 'acquired', takeover: reply[3] === 1, leaseExpiresAt: reply[2], now: reply[1] };
        case 'completed':
          return { outcome: 'completed', value: reply[2], now: reply[1] };
        case 'in-progress':
          return { outcome: 'in-progress', retryAfterMs: reply[2], now: reply[1] };
        case 'mismatch':
          return { outcome: 'mismatch', now: reply[1] };
        default:
          throw new StoreError('idempotencyBegin', new Error(`unexpected reply ${JSON.stringify(reply)}`), {
            outcome: 'unknown',
            retriable: false,
          });
      }
    },

    async idempotencyRenew(name, key, token, leaseMs) {
      const record = recordKey(nonEmptyStringArg('name', name), nonEmptyStringArg('key', key));
      const args = [nonEmptyStringArg('token', token), positiveMs('leaseMs', leaseMs)];
      return (await call('idempotencyRenew', scripts.idempotencyRenew, record, args)) === 1;
    },

    async idempotencyComplete(name, key, token, value, ttlMs) {
      const record = recordKey(nonEmptyStringArg('name', name), nonEmptyStringArg('key', key));
      // Redis stores UTF-8: a lone surrogate would come back as U+FFFD, not as it was stored.
      if (typeof value !== 'string' || !isWellFormed(value)) {
        throw new InvalidArgumentError('value', 'a well-formed string (a serialized value)', value);
      }
      const args = [nonEmptyStringArg('token', token), value, positiveMs('ttlMs', ttlMs)];
      return (await call('idempotencyComplete', scripts.idempotencyComplete, record, args)) === 1;
    },

    async idempotencyRelease(name, key, token) {
      const record = recordKey(nonEmptyStringArg('name', name), nonEmptyStringArg('key', key));
      const args = [nonEmptyStringArg('token', token)];
      return (await call('idempotencyRelease', scripts.idempotencyRelease, record, args)) === 1;
    },
  };
}

/** A duration in ms for a script: a positive safe integer (Lua reads it exactly: below 2^53). */
function positiveMs(path: string, value: unknown): string {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new InvalidArgumentError(path, 'a positive safe integer (ms)', value);
  }
  return String(value);
}
