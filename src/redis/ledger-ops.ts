// The ledger operations of the Redis store: applies batched into ledger-apply.lua calls (one per
// turn of the event loop, on a cluster one per master: node-batch.ts), resolves in ledger-resolve.lua steps (resolve.ts), the
// owner reads of ledger-read.lua, journals (journal-reader.ts) and scope totals. An owner is
// registered before a script books under it (owner-registry.ts).
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError, InvalidOptionError, StoreError } from '../core/errors.js';
import { ownRecord, setOwn } from '../core/own-record.js';
import { isPlainObject, knownKeys, nonNegativeInt, orderFromString } from '../core/validate.js';
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
import { type Durability, evalWaited, type NotReplicatedError } from './durability.js';
import { evalScript, type RedisLike } from './eval.js';
import { readJournal } from './journal-reader.js';
import { ownerKeys, scopeField, scopeOwnersKey } from './keys.js';
import { NodeBatchRefused, type NodeClient, type NodeRouter } from './node-batch.js';
import { type OwnerRegistry, ownerRegistry, type Registration } from './owner-registry.js';
import { pushEntryFields, resolveEntry, resolveSteps, toResolveResult } from './resolve.js';
import { type LuaScript, scripts } from './scripts.generated.js';
import { type GuardedCall, isClosedClient, redisFailure, redisStoreError } from './store-error.js';

// At most this many applies per script call. A ledger step costs ~8-20 µs of Redis time by machine
// (scripts/redis-ledger-cost.mjs, on the redis-ledger bench's workload), so 128 of them hold the
// server for ~2-3 ms at most (other clients wait no longer than that); the batch is one JSON
// argument plus 2 keys per apply.
const MAX_BATCH = 128;

const JOURNAL_KEYS = ['maxEntriesPerOwner'] as const;

/**
 * One entry of ledger-apply's flat JSON argument: call number, signature, capacity, order ('' when none),
 * horizon (1 or 0), scope ('' when none), meta JSON ('' when none), n, then n field, delta pairs.
 */
type ApplyEntry = (string | number)[];

/** One entry's reply: outcome, journal seq ('' unless applied), the owner's balances. */
type ApplyReply = [LedgerApplyResult['outcome'], string, Record<string, string>, 1?];

/** One queued apply: the script's keys and entry, and whose registry entries it needs first. */
interface ApplyItem extends BatchItem<LedgerApplyResult>, Registration {
  readonly entry: ApplyEntry;
}

/** The ledger half of the Redis store. */
export type RedisLedgerOps = Pick<
  Store,
  'ledgerApply' | 'ledgerResolve' | 'ledgerBalances' | 'ledgerWindow' | 'ledgerJournal' | 'ledgerScopeTotals'
>;

/** What the ledger operations run on. */
export interface RedisLedgerContext {
  /** The caller's client: whether it is closed, whether it is a Cluster, its connection losses. */
  readonly client: RedisLike;
  /** The same client, every command's wait bounded (bounded-client.ts). */
  readonly redis: RedisLike;
  readonly prefix: string;
  readonly durability: Durability | undefined;
  /** On a Cluster: batches by master (node-batch.ts). */
  readonly nodes: NodeRouter | undefined;
  /** The scripts' journal limit (see {@link journalLimit}). */
  readonly journalLimit: string;
  readonly guarded: GuardedCall;
}

/**
 * The `journal` option as the scripts' journal limit: '' keeps every entry, '0' none, n the
 * newest n per owner.
 */
export function journalLimit(journal: unknown): string {
  if (journal !== undefined && !isPlainObject(journal)) {
    throw new InvalidOptionError('journal', 'an object like { maxEntriesPerOwner: 1000 }', journal);
  }
  if ((journal as { maxEntries?: unknown } | undefined)?.maxEntries !== undefined) {
    throw new InvalidOptionError(
      'journal.maxEntries',
      'absent on Redis: retention there is per owner, `journal.maxEntriesPerOwner`',
      (journal as { maxEntries?: unknown }).maxEntries,
    );
  }
  if (journal !== undefined) knownKeys('journal', journal, JOURNAL_KEYS);
  const max = (journal as { maxEntriesPerOwner?: number } | undefined)?.maxEntriesPerOwner;
  // `Infinity` keeps every entry, as leaving it out does (and as the memory store's maxEntries).
  if (max === undefined || max === Number.POSITIVE_INFINITY) return '';
  return String(nonNegativeInt('journal.maxEntriesPerOwner', max));
}

/** The ledger operations on Redis (see the file's header). */
export function redisLedgerOps(ctx: RedisLedgerContext): RedisLedgerOps {
  const { redis, prefix, guarded } = ctx;
  const registry = ownerRegistry(ctx.client, redis, prefix);
  // This store's run: every apply carries it and a call number, so a script the client sends again
  // after a lost reply is answered as it was instead of being applied again (see ledger-apply.lua).
  // 72 random bits: runs on one owner never share an id by chance.
  const run = randomBytes(9).toString('base64url');
  let calls = 0;
  const enqueue = createBatcher<LedgerApplyResult, ApplyItem>({
    groupOf: ctx.nodes?.groupOf,
    ordered: true,
    maxBatch: MAX_BATCH,
    send: (items) =>
      ctx.nodes === undefined
        ? sendApplies(ctx, registry, run, items)
        : ctx.nodes.run(
            items,
            (slot) => sendApplies(ctx, registry, run, slot),
            (node, all) => sendApplies(ctx, registry, run, all, node),
          ),
  });

  /** The owner's balances JSON, horizon and window (see ledger-read.lua); [] when it has none. */
  const readOwner = async (ledger: string, owner: string): Promise<string[]> => {
    const [state] = ownerKeys(prefix, ledger, owner);
    // In call order with this process's applies of the owner (see the batcher's barrier).
    return (await enqueue.barrier(state, () =>
      evalScript(redis, scripts.ledgerRead, [state], []),
    )) as string[];
  };

  return {
    // Not wrapped in `guarded` and not async: a settled batch resolves each caller's promise
    // directly (the batch's own failure is already a StoreError), one promise per apply.
    ledgerApply: (cmd: LedgerApplyCommand) =>
      // Inside the executor: anything thrown rejects the promise instead of escaping.
      new Promise<LedgerApplyResult>((resolve, reject) => {
        try {
          const meta = checkApplyCommand(cmd);
          const entry: ApplyEntry = pushEntryFields([String(++calls)], cmd, meta);
          // Enqueued synchronously, and a batch holding an owner of a batch in flight waits for it
          // (see the batcher), so each owner's calls reach Redis in call order; a batch registers
          // its owners (and scopes) before its script runs.
          const memo = registry.owner(cmd.ledger, cmd.owner);
          const { ledger, owner, scope } = cmd;
          enqueue({ memo, ledger, owner, scope, keys: memo.keys, entry, resolve, reject });
        } catch (err) {
          // Thrown before it was queued: nothing was sent.
          reject(refused('ledgerApply', err));
        }
      }),

    ledgerResolve: (cmd: LedgerApplyCommand) => {
      let meta: string | undefined;
      try {
        meta = checkApplyCommand(cmd);
      } catch (err) {
        // Thrown before anything was sent.
        return Promise.reject(refused('ledgerResolve', err));
      }
      return resolveOne(ctx, registry, (key, call) => enqueue.barrier(key, call), cmd, meta);
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
      // (holding them would stall every apply of this process for a read as long as its owners).
      guarded('ledgerScopeTotals', () =>
        enqueue.barrier(undefined, () => scopeTotals(redis, prefix, ledger, scope), false),
      ),
  };
}

/**
 * What a command that failed before it was sent rejects with: a malformed command is the
 * caller's error, as in the memory store; anything else the store's (nothing was sent).
 */
function refused(operation: string, err: unknown): unknown {
  return err instanceof InvalidArgumentError
    ? err
    : new StoreError(operation, err, { outcome: 'not-applied', retriable: false });
}

/**
 * One batch of applies: its owners registered, then one ledger-apply.lua call, or with `node` one
 * call of its node variant on that master (throws NodeBatchRefused when it did not run).
 */
async function sendApplies(
  { client, redis, durability, journalLimit, nodes }: RedisLedgerContext,
  registry: OwnerRegistry,
  run: string,
  items: readonly ApplyItem[],
  node?: NodeClient,
): Promise<LedgerApplyResult[]> {
  // Whether the script was given to the client, and whether the client was closed then (it
  // refuses a command in the same synchronous run, never sends it): what a failure means.
  let sent = false;
  let closed = isClosedClient(client);
  try {
    // Owners this process had registered before: if the script finds no state for one of
    // them, Redis lost it (a restart without persistence, a failover to a lagging replica),
    // and its registry entries may be gone too.
    const known = items.map((item) => item.memo.inLedger);
    const before = registry.generation.value;
    await registry.register(items);
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
    const args = [JSON.stringify(entries), journalLimit, run];
    const { reply, short } =
      node === undefined || nodes === undefined
        ? await evalWaited(redis, durability, 'ledgerApply', items.length, scripts.ledgerApply, keys, args)
        : await nodes.eval(node, durability, 'ledgerApply', items.length, scripts.ledgerApply, keys, args);
    const replies = JSON.parse(reply as string) as ApplyReply[];
    // The connection dropped between the SADDs and the script's answer: the Redis that ran the
    // script may have lost them (a restart, a failover), so they are written again.
    const lost =
      registry.generation.value !== before
        ? items
        : items.filter((_item, i) => known[i] && replies[i]?.[3] === 1);
    if (lost.length > 0) await registry.registerAgain(lost);
    // Not confirmed by enough replicas: after the bookkeeping above (the script has run), each
    // caller gets ERR_STORE `unknown` and retries the same entry (see DurabilityOptions.onShort).
    if (short) throw short;
    return replies.map(toApplyResult);
  } catch (err) {
    // Nothing ran: the batch goes per slot (node-batch.ts).
    if (err instanceof NodeBatchRefused) throw err;
    if (sent) throw redisStoreError('ledgerApply', err, closed, 'script');
    // The registration (or the batch's encoding) failed: the script never went out.
    const { retriable } = redisFailure(err, closed, 'write');
    throw new StoreError('ledgerApply', err, { outcome: 'not-applied', retriable });
  }
}

/**
 * ledgerResolve: the owner (and scope) registered first, as for an apply (a resolve may book);
 * then the script's steps, each in call order with this process's applies of the owner
 * (`barrier`: the apply batcher's).
 */
async function resolveOne(
  { client, redis, durability, journalLimit }: RedisLedgerContext,
  registry: OwnerRegistry,
  barrier: <T>(key: string, call: () => Promise<T>) => Promise<T>,
  cmd: LedgerApplyCommand,
  meta: string | undefined,
): Promise<LedgerResolveResult> {
  const memo = registry.owner(cmd.ledger, cmd.owner);
  const item: Registration = { memo, ledger: cmd.ledger, owner: cmd.owner, scope: cmd.scope };
  const known = memo.inLedger;
  const before = registry.generation.value;
  let closed = isClosedClient(client);
  try {
    await registry.register([item]);
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
      journalLimit,
      (call) => barrier(memo.keys[0], call),
      undefined,
      evaluate,
    );
  } catch (err) {
    // Any step may have been the one that decides and books (the others change nothing).
    throw redisStoreError('ledgerResolve', err, closed, 'script');
  }
  if (reply[0] === 'applied' && (registry.generation.value !== before || (known && reply[3] === 1))) {
    // As after an apply: Redis may have lost the registrations with the owner's state.
    await registry.registerAgain([item]);
  }
  if (short) throw new StoreError('ledgerResolve', short, { outcome: 'unknown', retriable: true });
  return toResolveResult(reply, balancesOf);
}

/** Every owner's share of `scope`, summed (run as a barrier: see ledgerScopeTotals). */
async function scopeTotals(
  redis: RedisLike,
  prefix: string,
  ledger: string,
  scope: string,
): Promise<Balances> {
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
