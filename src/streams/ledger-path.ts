// The exactly-once path of the consumer: an entry whose effect is a ledger apply on the same
// Redis is booked and acked by one script (stream-apply-ack.lua), fenced by its delivery.
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { isPlainObject, isWellFormed, knownKeys } from '../core/validate.js';
import { createLedger, type LedgerEntry } from '../ledger/ledger.js';
import { clientKeyPrefix } from '../redis/client-options.js';
import { connectionGeneration } from '../redis/connection-generation.js';
import type { RedisLike } from '../redis/eval.js';
import { ledgerOwnersKey, scopeOwnersKey } from '../redis/keys.js';
import { createOwnerMemo, type OwnerMemo, rememberScope } from '../redis/owner-memo.js';
import { pushEntryFields, resolveEntry, resolveSteps } from '../redis/resolve.js';
import type { LuaScript } from '../redis/scripts.generated.js';
import { scripts } from '../redis/scripts.generated.js';
import { keySlot } from '../redis/slot.js';
import { checkApplyCommand } from '../store/apply-command.js';
import type { LedgerApplyCommand, LedgerApplyResult, Store } from '../store/store.js';
import type { Delivery } from './delivery.js';
import { compareIdText } from './stream-id.js';

/**
 * The `ledger` option of the consumer: the ledger it books into, as `createLedger` and
 * `createRedisStore` describe it (read it back with a ledger made with the same `name`,
 * `capacity`, `horizon` and a Redis store with the same `prefix` and `journal`), and `entry`, which
 * turns a delivery into the entry to book (`null` books nothing; the entry is acked).
 */
export interface StreamLedgerOptions<E = unknown> {
  /** Window capacity per owner (see `createLedger`). */
  capacity: number;
  /** The ledger's name. Default `'default'`. */
  name?: string;
  /** Answer `stale` below the horizon (see `createLedger`). Default `true`. */
  horizon?: boolean;
  /** The Redis store's key prefix. Default `'onceflow:'` (as `createRedisStore`). */
  prefix?: string;
  /** Journal retention per owner (as `createRedisStore`'s `journal`). Default: keep every entry. */
  journal?: { maxEntriesPerOwner?: number };
  /** The ledger entry of a delivery (its signature is the dedup mark), or null to book nothing. */
  entry(delivery: Delivery<E>): LedgerEntry | null | undefined | Promise<LedgerEntry | null | undefined>;
}

/**
 * What one delivery of a batch answered: ledger-apply's outcome, `acked` (nothing to book: acked
 * alone), `fenced` (nothing done), or `held` (nothing done: an entry before it in its run was
 * fenced or left pending, and it waits its turn).
 */
export type ApplyAckReply =
  | { readonly outcome: 'fenced' | 'held' | 'acked' }
  | { readonly outcome: LedgerApplyResult['outcome']; readonly seq: number | undefined };

/**
 * One delivery to book: its stream id and token, the validated command (none: acked only), and
 * whether it follows the item before it in its key's run (see stream-apply-ack.lua).
 */
export interface ApplyAckItem {
  readonly id: string;
  readonly token: number;
  readonly command: LedgerApplyCommand | undefined;
  readonly follows?: boolean;
}

/** The ledger side of a consumer: turns entries into commands and books batches of them. */
export interface LedgerPath<E> {
  /** The command for a delivery (undefined: nothing to book), validated as the ledger does. */
  command(delivery: Delivery<E>): Promise<LedgerApplyCommand | undefined>;
  /** Books and acks the items, in order, in one script call; one reply per item, in order. */
  applyAck(items: readonly ApplyAckItem[]): Promise<ApplyAckReply[]>;
  /**
   * Settles a command the window answered `stale` from the owner's journal, as `ledger.resolve`
   * does (ledger-resolve.lua): booked when provably new, `duplicate` when the journal holds it,
   * `unknown` when nothing can be proven. Not fenced: the journal decides, so a consumer whose
   * delivery was reclaimed meanwhile books nothing twice (the other one finds it `duplicate`).
   */
  resolve(command: LedgerApplyCommand): Promise<ResolvedReply>;
}

/** What a resolve of a stale entry answered. */
export interface ResolvedReply {
  readonly outcome: 'applied' | 'duplicate' | 'unknown';
  readonly seq: number | undefined;
}

/**
 * Builds the ledger path. On Redis Cluster a script's keys must share a slot, so each owner's keys
 * must hash with the stream: checked per entry (a typed error naming the owner). `maxHeld`: how
 * many entries the consumer holds at most (the count of the script's pending range).
 */
export function createLedgerPath<E>(
  options: StreamLedgerOptions<E>,
  client: RedisLike,
  raw: object,
  stream: string,
  deadStream: string,
  attemptsKey: string,
  group: string,
  consumer: string,
  maxHeld: number,
): LedgerPath<E> {
  // Longer than most functions: one closure over the recording ledger, the owners' memo and the
  // run's call numbers, which the command, the apply-ack batch and the resolve share.
  if (!isPlainObject(options)) throw new InvalidOptionError('ledger', 'an object', options);
  knownKeys('ledger', options, ['capacity', 'name', 'horizon', 'prefix', 'journal', 'entry']);
  if (options.journal !== undefined) {
    if (!isPlainObject(options.journal)) {
      throw new InvalidOptionError('ledger.journal', 'an object { maxEntriesPerOwner }', options.journal);
    }
    knownKeys('ledger.journal', options.journal, ['maxEntriesPerOwner']);
  }
  if (typeof options.entry !== 'function') {
    throw new InvalidOptionError(
      'ledger.entry',
      'a function (delivery) => LedgerEntry | null',
      options.entry,
    );
  }
  const prefix = options.prefix ?? 'onceflow:';
  if (typeof prefix !== 'string' || /[{}]/.test(prefix) || !isWellFormed(prefix)) {
    throw new InvalidOptionError('ledger.prefix', 'a well-formed string without `{` or `}`', prefix);
  }
  const maxPerOwner = options.journal?.maxEntriesPerOwner;
  const journalLimit =
    maxPerOwner === undefined || maxPerOwner === Number.POSITIVE_INFINITY ? '' : String(maxPerOwner);
  if (journalLimit !== '' && !(Number.isSafeInteger(maxPerOwner) && (maxPerOwner as number) >= 0)) {
    throw new InvalidOptionError(
      'ledger.journal.maxEntriesPerOwner',
      'a non-negative safe integer',
      maxPerOwner,
    );
  }
  // The ledger validates an entry and turns it into the store command (sizes, amounts, fields):
  // a ledger over a store that only records the command it is given does exactly that, so the
  // consumer books what `ledger.apply` would, validated the same way, without a copy of the rules.
  let captured: LedgerApplyCommand | undefined;
  const recorder = {
    kind: 'stream-ledger-path',
    ledgerApply(cmd: LedgerApplyCommand) {
      captured = cmd;
      return Promise.resolve({ outcome: 'applied', balances: {}, seq: 0 } as LedgerApplyResult);
    },
  } as unknown as Store;
  const ledger = createLedger({
    store: recorder,
    capacity: options.capacity,
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.horizon === undefined ? {} : { horizon: options.horizon }),
  });
  const cluster = (client as { isCluster?: unknown }).isCluster === true;
  // Slots of the keys as stored: with the client's keyPrefix.
  const keyPrefix = clientKeyPrefix(raw);
  const streamSlot = keySlot(keyPrefix + stream);
  const owners = createOwnerMemo(prefix);
  // Counted on the client as given (its events: `client` may be a bounded view of it).
  const generation = connectionGeneration(raw);
  // As the Redis store's: ledger-apply's replay marks name a run and a call (see ledger-apply.lua).
  const run = randomBytes(9).toString('base64url');
  let calls = 0;

  // Registers the owners (and their scopes) not known to be registered, before the script books
  // (as the Redis store does): totals and journal queries over all owners find every owner that
  // booked; a crash in between registers one with nothing. One SADD per registry key with every
  // owner of the batch it lacks, not one per owner: each command written costs the client a
  // socket write (~2-5 µs on loopback), and a batch of new owners would pay it per entry.
  async function register(list: readonly (readonly [OwnerMemo, LedgerApplyCommand])[]): Promise<void> {
    const adds = new Map<string, string[]>();
    const add = (key: string, owner: string) => {
      const owners = adds.get(key);
      if (owners === undefined) adds.set(key, [owner]);
      else owners.push(owner);
    };
    const registered: (readonly [OwnerMemo, LedgerApplyCommand])[] = [];
    for (const pair of list) {
      const [memo, cmd] = pair;
      if (memo.generation !== generation.value) {
        memo.generation = generation.value;
        memo.inLedger = false;
        memo.scopes.clear();
      }
      const scope = cmd.scope;
      const inScope = scope === undefined || memo.scopes.has(scope);
      if (memo.inLedger && inScope) continue;
      if (!memo.inLedger) add(ledgerOwnersKey(prefix, cmd.ledger), cmd.owner);
      if (!inScope) add(scopeOwnersKey(prefix, cmd.ledger, scope as string), cmd.owner);
      registered.push(pair);
    }
    if (adds.size === 0) return;
    await Promise.all([...adds].map(([key, owners]) => client.call('SADD', key, ...owners)));
    for (const [memo, cmd] of registered) {
      memo.inLedger = true;
      if (cmd.scope !== undefined) rememberScope(memo, cmd.scope);
    }
  }

  // Per owner (its state key), the last apply-ack call holding it, settled (never rejects) when
  // that call is: a call waits for the calls still in flight that hold one of its owners, so each
  // owner's calls reach Redis one after the other, in call order. Sent concurrently, an earlier
  // call could arrive after a later one (its EVALSHA answered NOSCRIPT and sent again as EVAL after
  // another process loaded the script, a Cluster TRYAGAIN or ASK retried during a slot migration)
  // and be answered `duplicate` by its run's replay mark (ledger-book.lua: an older call cannot
  // come back), acked without being booked. No deadlock: a call only waits for calls made before
  // it, each of which needs only Redis to settle; a waiting call's entries still count as running
  // (hold-limits.ts), so the bounds hold. Calls of other owners still go out pipelined.
  const tails = new Map<string, Promise<void>>();

  // Books and acks `items` (`memos`: each one's owner memo) in one script call: see applyAck.
  async function send(
    items: readonly ApplyAckItem[],
    memos: readonly (OwnerMemo | undefined)[],
  ): Promise<ApplyAckReply[]> {
    // The stream, dead-letter and attempts keys once, then each booked entry's two owner keys.
    const keys: string[] = [stream, deadStream, attemptsKey];
    const entries: (string | number)[] = [];
    const known: boolean[] = [];
    let first = (items[0] as ApplyAckItem).id;
    let last = first;
    const toRegister: [OwnerMemo, LedgerApplyCommand][] = [];
    for (const [i, item] of items.entries()) {
      if (compareIdText(item.id, first) < 0) first = item.id;
      else if (compareIdText(item.id, last) > 0) last = item.id;
      const memo = memos[i];
      known.push(memo?.inLedger === true);
      if (memo !== undefined) toRegister.push([memo, item.command as LedgerApplyCommand]);
    }
    await register(toRegister);
    // Call numbers are given after the last await, once every earlier call holding one of these
    // owners settled (applyAck's tails): each owner's calls are numbered in the order they reach
    // Redis, as ledger-apply's replay marks need.
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as ApplyAckItem;
      const memo = memos[i];
      // Per entry: its stream id, its token (for the fence), whether it follows the entry before
      // it in its run, then 0 (nothing to book) or ledger-apply's entry (call number first).
      entries.push(item.id, item.token, item.follows === true ? 1 : 0);
      if (memo === undefined) {
        entries.push(0);
        continue;
      }
      const cmd = item.command as LedgerApplyCommand;
      keys.push(memo.keys[0], memo.keys[1]);
      entries.push(String(++calls));
      pushEntryFields(entries, cmd, checkApplyCommand(cmd));
    }
    const raw = await evalAnyKeys(client, scripts.streamApplyAck, keys, [
      group,
      consumer,
      JSON.stringify(entries),
      journalLimit,
      run,
      '',
      first,
      last,
      // Every entry this consumer holds (at most maxHeld) fits: the range's reply covers the
      // batch unless its pending list also has entries it let go (lost, fenced) or left pending
      // for a blocked key (spilled) in between, which are then checked one by one (see
      // stream-apply-ack.lua).
      maxHeld,
    ]);
    const replies = JSON.parse(raw as string) as [string, string?, unknown?, 1?][];
    return replies.map((reply, i) => {
      if (reply[0] === 'fenced' || reply[0] === 'held' || reply[0] === 'acked') {
        return { outcome: reply[0] };
      }
      if (reply[3] === 1 && known[i]) {
        // Redis had lost the owner's state (a restart without persistence): its registry
        // entries may be gone too; registered again on its next booking.
        const memo = memos[i] as OwnerMemo;
        memo.inLedger = false;
        memo.scopes.clear();
      }
      const outcome = reply[0] as LedgerApplyResult['outcome'];
      return { outcome, seq: reply[1] === '' || reply[1] === undefined ? undefined : Number(reply[1]) };
    });
  }

  // Sends `items` once every call in flight holding one of their owners settled, and stands as
  // those owners' tail until it settles (see `tails`). Synchronous up to the send: the tails are
  // read and set in call order.
  function ordered(
    items: readonly ApplyAckItem[],
    memos: readonly (OwnerMemo | undefined)[],
  ): Promise<ApplyAckReply[]> {
    const waits = new Set<Promise<void>>();
    for (const memo of memos) {
      const tail = memo === undefined ? undefined : tails.get(memo.keys[0]);
      if (tail !== undefined) waits.add(tail);
    }
    const sent = waits.size === 0 ? send(items, memos) : Promise.all(waits).then(() => send(items, memos));
    const settled = sent.then(ignore, ignore);
    for (const memo of memos) if (memo !== undefined) tails.set(memo.keys[0], settled);
    void settled.then(() => {
      for (const memo of memos) {
        if (memo !== undefined && tails.get(memo.keys[0]) === settled) tails.delete(memo.keys[0]);
      }
    });
    return sent;
  }

  return {
    async command(delivery) {
      const entry = await options.entry(delivery);
      if (entry === null || entry === undefined) return undefined;
      captured = undefined;
      // The ledger validates and calls the recorder synchronously: the command is read before
      // anything else runs (other deliveries' commands are made concurrently). Invalid input
      // rejects (ERR_INVALID_ARGUMENT), recording nothing.
      const applied = ledger.apply(entry);
      const cmd = captured as LedgerApplyCommand | undefined;
      captured = undefined;
      await applied;
      if (cmd === undefined) throw new Error('the ledger did not produce a command');
      if (cluster) {
        const [state] = owners.get(cmd.ledger, cmd.owner).keys;
        if (keySlot(keyPrefix + state) !== streamSlot) {
          throw new InvalidArgumentError(
            'ledger.entry(...).owner',
            `an owner whose ledger keys share the stream's hash slot on Redis Cluster (the apply and the XACK are one script): name the stream with the owner's hash tag, e.g. \`${state.slice(prefix.length, state.indexOf('}') + 1)}:events\``,
            cmd.owner,
          );
        }
      }
      return cmd;
    },
    async applyAck(items) {
      // Per entry its owner's memo (none: nothing to book); read before anything else runs, so a
      // call finds as tails exactly the calls made before it (see `tails`).
      const memos = items.map((item) => {
        const cmd = item.command;
        return cmd === undefined ? undefined : owners.get(cmd.ledger, cmd.owner);
      });
      // The runs (an entry and those that follow it) holding an owner of a call in flight wait for
      // it in a call of their own, the others are sent at once: two batches in flight usually share
      // an owner or two (64 entries over 2,000 owners: ~87% of the time), and waiting with the
      // whole batch left Redis idle between them. A run is never split, so its `held` rule holds.
      const now: number[] = [];
      const later: number[] = [];
      for (let at = 0; at < items.length; ) {
        let end = at + 1;
        while (end < items.length && (items[end] as ApplyAckItem).follows === true) end++;
        let busy = false;
        for (let i = at; i < end && !busy; i++) {
          const memo = memos[i];
          busy = memo !== undefined && tails.has(memo.keys[0]);
        }
        for (let i = at; i < end; i++) (busy ? later : now).push(i);
        at = end;
      }
      if (now.length === 0 || later.length === 0) return ordered(items, memos);
      const part = (at: number[]) =>
        ordered(
          at.map((i) => items[i] as ApplyAckItem),
          at.map((i) => memos[i]),
        );
      // In this order: the waiting part also waits for the part sent now when they share an owner.
      const [first, second] = await Promise.all([part(now), part(later)]);
      const replies: ApplyAckReply[] = new Array(items.length);
      for (const [j, i] of now.entries()) replies[i] = first[j] as ApplyAckReply;
      for (const [j, i] of later.entries()) replies[i] = second[j] as ApplyAckReply;
      return replies;
    },
    async resolve(command) {
      const memo = owners.get(command.ledger, command.owner);
      // Registered as for a booking: the resolve may book.
      await register([[memo, command]]);
      const [outcome, seq] = await resolveSteps(
        client,
        [memo.keys[0], memo.keys[1]],
        resolveEntry(command, checkApplyCommand(command)),
        journalLimit,
        (call) => call(),
      );
      return { outcome, seq: seq === '' ? undefined : Number(seq) };
    },
  };
}

/**
 * EVALSHA, then EVAL on NOSCRIPT, as `evalScript` (src/redis/eval.ts) does, for a script whose
 * key count varies with its entries beyond its fixed keys (stream-apply-ack.lua: the stream keys
 * once, not once per entry: ~160 bytes an entry fewer to write and for Redis to read).
 */
async function evalAnyKeys(
  client: RedisLike,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await client.call('EVALSHA', script.sha1, keys.length, ...keys, ...args);
  } catch (err) {
    if (!(err instanceof Error && err.message.startsWith('NOSCRIPT'))) throw err;
    return client.call('EVAL', script.text, keys.length, ...keys, ...args);
  }
}

function ignore(): void {}
