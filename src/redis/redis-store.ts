import type { Duration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError, StoreError } from '../core/errors.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, isWellFormed, knownKeys } from '../core/validate.js';
import type { Store } from '../store/store.js';
import { boundedClient } from './bounded-client.js';
import { clientKeyPrefix } from './client-options.js';
import { type DurabilityOptions, durabilityOption } from './durability.js';
import type { RedisLike } from './eval.js';
import { redisIdempotencyOps } from './idempotency-ops.js';
import { journalLimit, redisLedgerOps } from './ledger-ops.js';
import { redisLimiterOps } from './limiter-ops.js';
import { nodeRouter } from './node-batch.js';
import { redisOrderingOps } from './ordering-ops.js';
import { guardedCalls, isClosedClient, redisStoreError } from './store-error.js';

/** Options of {@link createRedisStore}. */
export interface RedisStoreOptions {
  /** An ioredis `Redis` or `Cluster` (anything with `call(command, ...args)`). Not closed by the store. */
  client: RedisLike;
  /** Prefix of every key, so runs and applications never meet. No `{` or `}`. Default `'onceflow:'`. */
  prefix?: string;
  /**
   * Journal retention **per owner**: `maxEntriesPerOwner` keeps the newest n entries of each
   * owner's stream (XADD MAXLEN, exact), 0 keeps none. Dedup windows and scope totals do not
   * depend on it. Default (or `Infinity`): keep every entry. `ledger.resolve` reads an owner's
   * retained journal (newest first, ~5 µs of Redis time per entry, in script calls of at most 200
   * entries), so this also bounds what a resolve of a new entry costs; a limit that drops entries
   * keeps what they were (`ledger.resolve` then answers `unknown` at or below their orders). (The memory store's `maxEntries` bounds a whole
   * ledger; on Redis that would need a ledger-wide, cross-slot count, so it is refused by name.)
   */
  journal?: { maxEntriesPerOwner?: number };
  /**
   * Replicas that must confirm a write before it is answered: ledger applies and resolves, and
   * idempotency records, each script call followed by WAIT (WAITAOF with `aof`) on its
   * connection. Without it (default) an answer means the master has the write, and a failover
   * to a replica that had not received it yet loses it (docs/redis.md, *Failover and durability*).
   */
  durability?: DurabilityOptions;
  /**
   * How long each command the store sends may wait: for the client to be connected (it is held
   * meanwhile, never queued in the client), then for the reply. Past it the call rejects with
   * `ERR_STORE`: `outcome: 'not-applied'` when the command was never sent, `'unknown'` when it was
   * (it may have run). An operation is one command, or a few in turn (a reset pages through SCAN).
   * With `durability`, a script call and its WAIT are one pipeline, held and bounded as one
   * command: its reply waits at most `timeout` plus `durability.timeout`.
   * Default `'10s'`; at most 2^31 - 1 ms.
   */
  timeout?: Duration;
}

// The options createRedisStore knows (anything else is a typo, refused by name).
const OPTION_KEYS = ['client', 'prefix', 'journal', 'timeout', 'durability'] as const;

// How long a store command waits, by default, for the client to be connected and then for the
// reply. 10 s: twice the longest a healthy server keeps a command waiting (5 s, its
// busy-reply-threshold, before it answers BUSY while another client's script runs; the store's
// own scripts hold it a few ms: see MAX_BATCH in ledger-ops.ts), and as long as ioredis waits for
// a connection by default (connectTimeout, 10 s), so one reconnection attempt (retries come at
// most 2 s apart) fits. A wait past it means the server, or the path to it, is gone: ioredis alone would hold a
// command for a client that never connects until its 20 retries ran out (~73 s measured), and
// without end for one that connected and then hung.
export const DEFAULT_TIMEOUT_MS = 10_000;

/** The `timeout` option in ms: a positive duration a timer can wait out. */
export function storeTimeout(value: Duration | undefined): number {
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  const ms = timerDuration('timeout', value);
  if (ms <= 0) throw new InvalidOptionError('timeout', 'a positive duration', value);
  return ms;
}

/**
 * The ledger on Redis or Redis Cluster: every apply is one Lua script on the owner's hash slot
 * (window check with horizon, balance change, scope share, journal append), with time from Redis
 * `TIME`. Many processes on many machines share one exact ledger.
 *
 * A script sent again after its reply was lost (a killed connection) is answered as it ran, by
 * its run id and call number, not applied again (docs/redis.md, *After a lost reply*).
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { createRedisStore } from 'onceflow/redis';
 * const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const prefix = `example:${process.pid}:`; // one key space per application (or test run)
 * const ledger = createLedger({ store: createRedisStore({ client, prefix }), capacity: 4 });
 * (await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } })).outcome; // 'applied'
 * (await ledger.apply({ owner: 'p1', signature: 's1', deltas: { coins: 5 } })).outcome; // 'duplicate'
 * // Clean up the example: SCAN the prefix a page at a time (never KEYS, which blocks the server).
 * let cursor = '0';
 * do {
 *   const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
 *   cursor = next;
 *   if (keys.length > 0) await client.unlink(...keys);
 * } while (cursor !== '0');
 * await client.quit();
 * ```
 */
export function createRedisStore(options: RedisStoreOptions): Store {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, OPTION_KEYS);
  const { client } = options;
  if (typeof (client as RedisLike | undefined)?.call !== 'function') {
    throw new InvalidOptionError('client', 'an ioredis Redis or Cluster client (with call())', client);
  }
  const prefix = options.prefix ?? 'onceflow:';
  // No braces (they would move the hash tag) and no lone surrogate (two such prefixes meet in one
  // key space once Redis stores them as UTF-8: one store's entries would be the other's repeats).
  if (typeof prefix !== 'string' || /[{}]/.test(prefix) || !isWellFormed(prefix)) {
    throw new InvalidOptionError(
      'prefix',
      'a well-formed string without `{` or `}` (they would move the hash tag)',
      prefix,
    );
  }
  const maxEntries = journalLimit(options.journal);
  const durability = durabilityOption(options.durability, client);
  // The client's own keyPrefix, prepended to every key it sends: a reset's SCAN must match it.
  const keyPrefix = clientKeyPrefix(client);
  const timeoutMs = storeTimeout(options.timeout);
  // Every command goes through it: sent only while the client is connected, its wait bounded.
  const redis = boundedClient(client, timeoutMs);
  const guarded = guardedCalls(client);

  // On a Cluster: a turn's calls of one master in one script call (node-batch.ts).
  const nodes = nodeRouter(client, timeoutMs);
  const limiter = redisLimiterOps(client, prefix, { keyPrefix, timeoutMs, nodes });

  const store: Store = {
    kind: 'redis',
    // Not wrapped in `guarded` (an async wrapper per take): the batch's failure is already a
    // StoreError, and a synchronous throw becomes one here.
    limiterTake: (cmd) => {
      try {
        return limiter.take(cmd);
      } catch (err) {
        // A malformed command is the caller's error, as in the memory store; anything else the store's.
        return Promise.reject(
          err instanceof InvalidArgumentError
            ? err
            : new StoreError('limiterTake', err, { outcome: 'not-applied', retriable: false }),
        );
      }
    },
    limiterReset: (namespace) => guarded('limiterReset', () => limiter.reset(namespace), 'script'),
    limiterDelete: (cmd) => guarded('limiterDelete', () => limiter.delete(cmd), 'write'),
    // A malformed command (or a penalty past the usage cap) is the caller's error, as in the memory store.
    limiterAdjust: (cmd) => {
      const closed = isClosedClient(client);
      return limiter.adjust(cmd).catch((err: unknown) => {
        throw err instanceof InvalidArgumentError || err instanceof StoreError
          ? err
          : redisStoreError('limiterAdjust', err, closed, 'script');
      });
    },
    ...redisOrderingOps(redis, prefix),
    ...redisIdempotencyOps(redis, prefix, durability, nodes),
    ...redisLedgerOps({ client, redis, prefix, durability, nodes, journalLimit: maxEntries, guarded }),
  };
  // Not part of the Store contract: how onceflow/ws finds the client and key space of a store it
  // is given (its session state and user streams live beside the store's keys).
  Object.defineProperty(store, REDIS_HANDLE, {
    value: { client, prefix, bounded: redis } satisfies RedisHandle,
  });
  return store;
}

const REDIS_HANDLE = Symbol('onceflow.redisHandle');

/** The client and key prefix a Redis store was created with. */
export interface RedisHandle {
  readonly client: RedisLike;
  readonly prefix: string;
  /** The client as the store sends through it: held while disconnected, every wait within the store's `timeout`. */
  readonly bounded: RedisLike;
}

/** The client and prefix of a store made by {@link createRedisStore}, or `undefined` for another store. */
export function redisHandleOf(store: Store): RedisHandle | undefined {
  return (store as unknown as { [REDIS_HANDLE]?: RedisHandle })[REDIS_HANDLE];
}
