import { InvalidArgumentError, StoreError } from '../core/errors.js';
import { isWellFormed } from '../core/validate.js';
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
      const key = recordKey(text('name', command?.name), text('key', command?.key));
      const args = [
        text('payloadHash', command?.payloadHash),
        text('token', command?.token),
        ms('leaseMs', command?.leaseMs),
      ];
      const reply = (await call('idempotencyBegin', scripts.idempotencyBegin, key, args)) as BeginReply;
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
      const record = recordKey(text('name', name), text('key', key));
      const args = [text('token', token), ms('leaseMs', leaseMs)];
      return (await call('idempotencyRenew', scripts.idempotencyRenew, record, args)) === 1;
    },

    async idempotencyComplete(name, key, token, value, ttlMs) {
      const record = recordKey(text('name', name), text('key', key));
      const args = [text('token', token), text('value', value), ms('ttlMs', ttlMs)];
      return (await call('idempotencyComplete', scripts.idempotencyComplete, record, args)) === 1;
    },

    async idempotencyRelease(name, key, token) {
      const record = recordKey(text('name', name), text('key', key));
      const args = [text('token', token)];
      return (await call('idempotencyRelease', scripts.idempotencyRelease, record, args)) === 1;
    },
  };
}

/**
 * A string argument, as the memory store takes it, and well-formed: Redis stores UTF-8, so a lone
 * surrogate would come back as U+FFFD (a value changed, two keys met). Checked before anything is sent.
 */
function text(path: string, value: unknown): string {
  if (typeof value !== 'string' || !isWellFormed(value)) {
    throw new InvalidArgumentError(path, 'a well-formed string (no lone surrogate)', value);
  }
  return value;
}

/**
 * A lease or ttl the script adds to Redis TIME: a positive safe integer of ms up to 2^52, as the
 * memory store takes it, so the sum (TIME is ~2^40.6 ms) stays an exact Lua double.
 */
function ms(path: string, value: unknown): string {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0 || value > 2 ** 52) {
    throw new InvalidArgumentError(path, 'a positive safe integer of milliseconds (at most 2^52)', value);
  }
  return String(value);
}
