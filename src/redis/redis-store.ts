import { randomBytes } from 'node:crypto';
import type { Duration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError, StoreError } from '../core/errors.js';
import { ownRecord, setOwn } from '../core/own-record.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, isWellFormed, knownKeys, nonNegativeInt, orderFromString } from '../core/validate.js';
import { checkApplyCommand } from '../store/apply-command.js';
import type {
  Balances,
  JournalQuery,
  LedgerApplyCommand,
  LedgerApplyResult,
  LedgerResolveResult,
  Store,
  WindowState,
} from '../store/store.js';
import { type BatchItem, createBatcher } from './batcher.js';
import { boundedClient } from './bounded-client.js';
import { clientKeyPrefix } from './client-options.js';
import { connectionGeneration } from './connection-generation.js';
import {
  type DurabilityOptions,
  durabilityOption,
  evalWaited,
  type NotReplicatedError,
} from './durability.js';
import { evalScript, type RedisLike } from './eval.js';
import { redisIdempotencyOps } from './idempotency-store.js';
import { readJournal } from './journal-reader.js';
import { ledgerOwnersKey, ownerKeys, scopeField, scopeOwnersKey } from './keys.js';
import { redisLimiterOps } from './limiter-ops.js';
import { redisOrderingOps } from './ordering-store.js';
import { createOwnerMemo, type OwnerMemo, rememberScope } from './owner-memo.js';
import { pushEntryFields, resolveEntry, resolveSteps, toResolveResult } from './resolve.js';
import { type LuaScript, scripts } from './scripts.generated.js';
import { isClosedClient, type RedisCallKind, redisFailure, redisStoreError } from './store-error.js';

// At most this many applies per script call. A ledger step costs ~8-20 µs of Redis time by machine
// (scripts/redis-ledger-cost.mjs, on the redis-ledger bench's workload), so 128 of them hold the
// server for ~2-3 ms at most (other clients wait no longer than that); the batch is one JSON
// argument plus 2 keys per apply.
const MAX_BATCH = 128;

/**
 * One entry of ledger-apply's flat JSON argument: call number, signature, capacity, order ('' when none),
 * horizon (1 or 0), scope ('' when none), meta JSON ('' when none), n, then n field, delta pairs.
 */
type ApplyEntry = (string | number)[];

/** One entry's reply: outcome, journal seq ('' unless applied), the owner's balances. */
type ApplyReply = [LedgerApplyResult['outcome'], string, Record<string, string>, 1?];

/** Whose registry entries a script that may book needs first: the owner's, and its scope's. */
interface Registration {
  readonly memo: OwnerMemo;
  readonly ledger: string;
  readonly owner: string;
  readonly scope: string | undefined;
}

/** One queued apply: the script's keys and entry, and whose registry entries it needs first. */
interface ApplyItem extends BatchItem<LedgerApplyResult> {
  readonly entry: ApplyEntry;
  readonly memo: OwnerMemo;
  readonly ledger: string;
  readonly owner: string;
  readonly scope: string | undefined;
}

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
const JOURNAL_KEYS = ['maxEntriesPerOwner'] as const;

// How long a store command waits, by default, for the client to be connected and then for the
// reply. 10 s: twice the longest a healthy server keeps a command waiting (5 s, its
// busy-reply-threshold, before it answers BUSY while another client's script runs; the store's
// own scripts hold it a few ms: see MAX_BATCH), and as long as ioredis waits for a connection
// by default (connectTimeout, 10 s), so one reconnection attempt (retries come at most 2 s apart)
// fits. A wait past it means the server, or the path to it, is gone: ioredis alone would hold a
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

// A registration that failed after its script had run is retried at 1, 2, 4 ... s, then every
// 32 s for as long as the process lives (until it succeeds, or the owner's own next batch made
// it): totals and journals must find what was booked. 32 s: a retry costs one SADD per
// registry key, and an outage longer than that is waited out without a storm of them.
const REGISTER_RETRY_MS = 1000;
const REGISTER_RETRY_MAX_MS = 32_000;

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
  if (options.journal !== undefined && !isPlainObject(options.journal)) {
    throw new InvalidOptionError('journal', 'an object like { maxEntriesPerOwner: 1000 }', options.journal);
  }
  if ((options.journal as { maxEntries?: unknown } | undefined)?.maxEntries !== undefined) {
    throw new InvalidOptionError(
      'journal.maxEntries',
      'absent on Redis: retention there is per owner, `journal.maxEntriesPerOwner`',
      (options.journal as { maxEntries?: unknown }).maxEntries,
    );
  }
  if (options.journal !== undefined) knownKeys('journal', options.journal, JOURNAL_KEYS);
  // `Infinity` keeps every entry, as leaving it out does (and as the memory store's maxEntries).
  const keepAll =
    options.journal?.maxEntriesPerOwner === undefined ||
    options.journal.maxEntriesPerOwner === Number.POSITIVE_INFINITY;
  const maxEntries = keepAll
    ? ''
    : String(nonNegativeInt('journal.maxEntriesPerOwner', options.journal?.maxEntriesPerOwner));
  const durability = durabilityOption(options.durability, client);
  // The client's own keyPrefix, prepended to every key it sends: a reset's SCAN must match it.
  const keyPrefix = clientKeyPrefix(client);
  const timeoutMs = storeTimeout(options.timeout);
  // Every command goes through it: sent only while the client is connected, its wait bounded.
  const redis = boundedClient(client, timeoutMs);
  const owners = createOwnerMemo(prefix);
  const generation = connectionGeneration(client);
  // This store's run: every apply carries it and a call number, so a script the client sends again
  // after a lost reply is answered as it was instead of being applied again (see ledger-apply.lua).
  // 72 random bits: runs on one owner never share an id by chance.
  const run = randomBytes(9).toString('base64url');
  let calls = 0;
  const enqueue = createBatcher<LedgerApplyResult, ApplyItem>({
    bySlot: (client as { isCluster?: unknown }).isCluster === true,
    ordered: true,
    maxBatch: MAX_BATCH,
    async send(items) {
      // Whether the script was given to the client, and whether the client was closed then (it
      // refuses a command in the same synchronous run, never sends it): what a failure means.
      let sent = false;
      let closed = isClosedClient(client);
      try {
        // Owners this process had registered before: if the script finds no state for one of
        // them, Redis lost it (a restart without persistence, a failover to a lagging replica),
        // and its registry entries may be gone too.
        const known = items.map((item) => item.memo.inLedger);
        const before = generation.value;
        await register(items);
        const keys: string[] = new Array(items.length * 2);
        const entries: ApplyEntry = [];
        for (let i = 0; i < items.length; i++) {
          const item = items[i] as ApplyItem;
          keys[2 * i] = item.memo.keys[0];
          keys[2 * i + 1] = item.memo.keys[1];
          for (const value of item.entry) entries.push(value);
        }
        // One JSON argument in, one JSON string out (see ledger-apply.lua).
        closed = isClosedClient(client);
        sent = true;
        const { reply, short } = await evalWaited(
          redis,
          durability,
          'ledgerApply',
          items.length,
          scripts.ledgerApply,
          keys,
          [JSON.stringify(entries), maxEntries, run],
        );
        const replies = JSON.parse(reply as string) as ApplyReply[];
        // The connection dropped between the SADDs and the script's answer: the Redis that ran the
        // script may have lost them (a restart, a failover), so they are written again.
        const lost =
          generation.value !== before ? items : items.filter((_item, i) => known[i] && replies[i]?.[3] === 1);
        if (lost.length > 0) {
          // Registered again (idempotent SADDs) before any caller sees its answer, so the
          // registries stay a superset of the owners with a share: totals and journals find them.
          for (const item of lost) {
            item.memo.inLedger = false;
            item.memo.scopes.clear();
          }
          try {
            await register(lost);
          } catch {
            // The script has run: its answers stand (a rejection would make callers retry what
            // was applied, with new call numbers the replay check cannot recognise). The owners
            // stay unregistered here, so their next batch registers them before its script, and
            // the SADDs are retried meanwhile.
            registerLater(lost, REGISTER_RETRY_MS);
          }
        }
        // Not confirmed by enough replicas: after the bookkeeping above (the script has run), each
        // caller gets ERR_STORE `unknown` and retries the same entry (see DurabilityOptions.onShort).
        if (short) throw short;
        return replies.map(toApplyResult);
      } catch (err) {
        if (sent) throw redisStoreError('ledgerApply', err, closed, 'script');
        // The registration (or the batch's encoding) failed: the script never went out.
        const { retriable } = redisFailure(err, closed, 'write');
        throw new StoreError('ledgerApply', err, { outcome: 'not-applied', retriable });
      }
    },
  });

  // Registers the owners (and their scopes) of a batch that this process has not registered yet,
  // before the script that books under them runs: a crash in between leaves an owner registered
  // with nothing booked (adds 0). Registered pairs are remembered, so this is rarely a round trip.
  async function register(items: readonly Registration[]): Promise<void> {
    // One SADD per registry key with every owner the batch adds to it (a batch of first contacts
    // is then a few commands, not one per owner and scope); marks run once all have succeeded.
    const members = new Map<string, Set<string>>();
    const marks: (() => void)[] = [];
    const add = (key: string, owner: string, mark: () => void) => {
      let set = members.get(key);
      if (set === undefined) members.set(key, (set = new Set()));
      set.add(owner);
      marks.push(mark);
    };
    for (const { memo, ledger, owner, scope } of items) {
      if (memo.generation !== generation.value) {
        // Made before a connection loss: the Redis that has them may be another one now.
        memo.generation = generation.value;
        memo.inLedger = false;
        memo.scopes.clear();
      }
      if (!memo.inLedger) {
        add(ledgerOwnersKey(prefix, ledger), owner, () => {
          memo.inLedger = true;
        });
      }
      if (scope !== undefined && !memo.scopes.has(scope)) {
        add(scopeOwnersKey(prefix, ledger, scope), owner, () => rememberScope(memo, scope));
      }
    }
    if (members.size === 0) return;
    await Promise.all([...members].map(([key, owners]) => redis.call('SADD', key, ...owners)));
    for (const mark of marks) mark();
  }

  // Retries the registrations of owners whose script has run, backing off, until they succeed or
  // the owners' own next batch made them (register() skips what is registered). Unref'd: a
  // process that exits meanwhile leaves them to the owners' next apply in any process that has
  // not registered them (docs/redis.md, *Per-scope totals without cross-slot scripts*).
  function registerLater(items: readonly Registration[], delayMs: number): void {
    const timer = setTimeout(() => {
      register(items).catch(() => registerLater(items, Math.min(delayMs * 2, REGISTER_RETRY_MAX_MS)));
    }, delayMs);
    timer.unref?.();
  }

  // A read or a delete: `kind` says which, for what its failure may have left (see redisFailure).
  async function guarded<T>(
    operation: string,
    fn: () => Promise<T>,
    kind: RedisCallKind = 'read',
  ): Promise<T> {
    const closed = isClosedClient(client);
    try {
      return await fn();
    } catch (err) {
      throw redisStoreError(operation, err, closed, kind);
    }
  }

  /** Queues one apply; the batch it joins settles it (see `send` above). */
  function enqueueApply(
    cmd: LedgerApplyCommand,
    resolve: (result: LedgerApplyResult) => void,
    reject: (err: unknown) => void,
  ): void {
    const meta = checkApplyCommand(cmd);
    const entry: ApplyEntry = pushEntryFields([String(++calls)], cmd, meta);
    // Enqueued synchronously, and a batch holding an owner of a batch in flight waits for it (see
    // the batcher), so each owner's calls reach Redis in call order; a batch registers its owners
    // (and scopes) before its script runs.
    const memo = owners.get(cmd.ledger, cmd.owner);
    const { ledger, owner, scope } = cmd;
    enqueue({ memo, ledger, owner, scope, keys: memo.keys, entry, resolve, reject });
  }

  /** The owner's balances JSON, horizon and window (see ledger-read.lua); [] when it has none. */
  async function readOwner(ledger: string, owner: string): Promise<string[]> {
    const [state] = ownerKeys(prefix, ledger, owner);
    // In call order with this process's applies of the owner (see the batcher's barrier).
    return (await enqueue.barrier(state, () =>
      evalScript(redis, scripts.ledgerRead, [state], []),
    )) as string[];
  }

  /**
   * ledgerResolve: the owner (and scope) registered first, as for an apply (a resolve may book);
   * then the script's steps, each in call order with this process's applies of the owner.
   */
  async function resolveOne(cmd: LedgerApplyCommand, meta: string | undefined): Promise<LedgerResolveResult> {
    const memo = owners.get(cmd.ledger, cmd.owner);
    const item: Registration = { memo, ledger: cmd.ledger, owner: cmd.owner, scope: cmd.scope };
    const known = memo.inLedger;
    const before = generation.value;
    let closed = isClosedClient(client);
    try {
      await register([item]);
    } catch (err) {
      // No script went out: nothing was booked.
      const { retriable } = redisFailure(err, closed, 'write');
      throw new StoreError('ledgerResolve', err, { outcome: 'not-applied', retriable });
    }
    closed = isClosedClient(client);
    let reply: Awaited<ReturnType<typeof resolveSteps>>;
    // With durability, each step waits for its replicas; the deciding step's shortfall (the last
    // one's) is thrown once the registrations below are done.
    let short: NotReplicatedError | undefined;
    const evaluate =
      durability === undefined
        ? undefined
        : async (script: LuaScript, keys: readonly string[], args: readonly (string | number)[]) => {
            const waited = await evalWaited(redis, durability, 'ledgerResolve', 1, script, keys, args);
            short = waited.short;
            return waited.reply;
          };
    try {
      reply = await resolveSteps(
        redis,
        memo.keys,
        resolveEntry(cmd, meta),
        maxEntries,
        (call) => enqueue.barrier(memo.keys[0], call),
        undefined,
        evaluate,
      );
    } catch (err) {
      // Any step may have been the one that decides and books (the others change nothing).
      throw redisStoreError('ledgerResolve', err, closed, 'script');
    }
    if (reply[0] === 'applied' && (generation.value !== before || (known && reply[3] === 1))) {
      // As after an apply: Redis may have lost the registrations with the owner's state.
      memo.inLedger = false;
      memo.scopes.clear();
      await register([item]).catch(() => registerLater([item], REGISTER_RETRY_MS));
    }
    if (short) throw new StoreError('ledgerResolve', short, { outcome: 'unknown', retriable: true });
    return toResolveResult(reply, balancesOf);
  }

  const limiter = redisLimiterOps(client, prefix, { keyPrefix, timeoutMs });

  return {
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
    ...redisOrderingOps(redis, prefix),
    ...redisIdempotencyOps(redis, prefix, durability),
    // Not wrapped in `guarded` and not async: a settled batch resolves each caller's promise
    // directly (the batch's own failure is already a StoreError), one promise per apply.
    ledgerApply: (cmd: LedgerApplyCommand) =>
      // Inside the executor: anything thrown rejects the promise instead of escaping.
      new Promise<LedgerApplyResult>((resolve, reject) => {
        try {
          enqueueApply(cmd, resolve, reject);
        } catch (err) {
          // A malformed command is the caller's error, as in the memory store; anything else the store's.
          // Thrown before it was queued: nothing was sent.
          reject(
            err instanceof InvalidArgumentError
              ? err
              : new StoreError('ledgerApply', err, { outcome: 'not-applied', retriable: false }),
          );
        }
      }),

    ledgerResolve: (cmd: LedgerApplyCommand) => {
      let meta: string | undefined;
      try {
        meta = checkApplyCommand(cmd);
      } catch (err) {
        // A malformed command is the caller's error, as in the memory store; anything else the store's.
        // Thrown before anything was sent.
        return Promise.reject(
          err instanceof InvalidArgumentError
            ? err
            : new StoreError('ledgerResolve', err, { outcome: 'not-applied', retriable: false }),
        );
      }
      return resolveOne(cmd, meta);
    },

    ledgerBalances: (ledger, owner) =>
      guarded('ledgerBalances', async () => {
        const [json] = await readOwner(ledger, owner);
        return json ? balancesOf(JSON.parse(json) as Record<string, string>) : {};
      }),

    ledgerWindow: (ledger, owner) =>
      guarded('ledgerWindow', async (): Promise<WindowState> => {
        const [, horizon, ...signatures] = await readOwner(ledger, owner);
        return horizon ? { signatures, horizon: orderFromString(horizon) } : { signatures };
      }),

    ledgerJournal: (ledger, query: JournalQuery) =>
      guarded('ledgerJournal', () =>
        query.owner === undefined
          ? enqueue.barrier(undefined, () => readJournal(redis, prefix, ledger, query), false)
          : enqueue.barrier(ownerKeys(prefix, ledger, query.owner)[0], () =>
              readJournal(redis, prefix, ledger, query),
            ),
      ),

    ledgerScopeTotals: (ledger, scope) =>
      // Ledger-wide reads go owner by owner, so other processes' applies interleave with them
      // anyway: they wait for this process's earlier applies but do not hold its later ones
      // (holding every apply for the length of a totals read halved a busy ledger's throughput).
      guarded('ledgerScopeTotals', () => enqueue.barrier(undefined, () => scopeTotals(ledger, scope), false)),
  };

  /** Every owner's share of `scope`, summed (run as a barrier: see ledgerScopeTotals). */
  async function scopeTotals(ledger: string, scope: string): Promise<Balances> {
    const owners = (await redis.call('SMEMBERS', scopeOwnersKey(prefix, ledger, scope))) as string[];
    const prefixOfScope = scopeField(scope, '');
    const totals = new Map<string, bigint>(); // a Map: no field can read an inherited member
    const shares = await Promise.all(
      // The state hash is a few small fields (window, horizon, counter, scope shares).
      owners.map((o) => redis.call('HGETALL', ownerKeys(prefix, ledger, o)[0]) as Promise<string[]>),
    );
    for (const flat of shares) {
      for (let i = 0; i < flat.length; i += 2) {
        const key = flat[i] as string;
        if (!key.startsWith(prefixOfScope)) continue;
        const field = key.slice(prefixOfScope.length);
        totals.set(field, (totals.get(field) ?? 0n) + BigInt(flat[i + 1] as string));
      }
    }
    return ownRecord(totals);
  }
}

function toApplyResult([outcome, seq, amounts]: ApplyReply): LedgerApplyResult {
  const balances = balancesOf(amounts);
  // ledger-apply.lua sends a seq exactly when the outcome is 'applied' (a replayed call too).
  return (seq === '' ? { outcome, balances } : { outcome, balances, seq: Number(seq) }) as LedgerApplyResult;
}

/**
 * The scripts' balances JSON (field -> decimal string), parsed, as balances: own data properties
 * whatever the field names (see ownRecord). JSON.parse makes every key its own, `__proto__` too.
 */
function balancesOf(amounts: Record<string, string>): Balances {
  const balances: Balances = {};
  for (const field of Object.keys(amounts)) setOwn(balances, field, BigInt(amounts[field] as string));
  return balances;
}
