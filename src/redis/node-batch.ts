// Redis Cluster: one script call per master and turn of the event loop, not one per hash slot.
// Owners (limiter keys, idempotency records) each have a hash tag of their own, so a turn's calls
// almost never share a slot: grouped by slot, every call would be a script call (and a round
// trip) of its own. The batcher groups them by the master that owns their slot (`groupOf`), and
// `run` sends a group of several slots as one call of the script's node variant
// (lib/node-batch.lua) on that master's own connection; a group the node variant cannot run whole
// goes as one script per slot through the Cluster client (declared keys, redirected by it).
import { boundedClient, NotSentError } from './bounded-client.js';
import { clientKeyPrefix } from './client-options.js';
import { evalWaited } from './durability.js';
import type { RedisLike } from './eval.js';
import { type LuaScript, scripts } from './scripts.generated.js';
import { groupBySlot, keySlot } from './slot.js';

/** What is read of an ioredis `Cluster` (typed structurally: ioredis is an optional peer). */
interface ClusterLike {
  /** Per slot, the node keys ("host:port") that serve it, the master first (ioredis's own map). */
  slots?: (string[] | undefined)[];
  nodes?(role: 'master'): NodeLike[];
}
interface NodeLike extends RedisLike {
  status?: unknown;
  options?: { host?: unknown; port?: unknown; keyPrefix?: unknown };
}

/**
 * A node variant that did not run (see node-batch.lua and {@link NodeRouter.run}): its batch goes
 * as one script per slot instead.
 */
export class NodeBatchRefused extends Error {
  override readonly name = 'NodeBatchRefused';
}

// Replies that mean the node variant did not run, nothing written: a key not local to the node
// (the prelude's error), or a refusal before the script started: its routing key's slot moved or
// is moving (MOVED, ASK, TRYAGAIN), the cluster or node not serving (CLUSTERDOWN, LOADING, BUSY,
// MASTERDOWN, READONLY: a master turned replica, NOREPLICAS), or `maxmemory` reached (a script
// with flags and without allow-oom is refused whole; one script per slot meets OOM as it always
// did, at its first write).
const REFUSED =
  /^(ONCEFLOW-NONLOCAL|MOVED|ASK|TRYAGAIN|CLUSTERDOWN|LOADING|BUSY|MASTERDOWN|READONLY|NOREPLICAS|OOM)\b/;
// A server that cannot run a script with a shebang (before Redis 7 it is a Lua syntax error) or
// with this flag: node variants are not sent to it again.
const NO_SHEBANG = /^ERR (Error compiling script|Unexpected flag|Unknown lua shebang)/i;
// ioredis's rejection of a command in flight when its connection closed: the script may have run.
const CONNECTION_CLOSED = 'Connection is closed.';

/**
 * How often node variants ran, how often a group of several slots went per slot instead, and how
 * many node variants were in flight when their connection closed (they may have run): for the tests.
 */
export const nodeBatchCounts = { node: 0, perSlot: 0, closed: 0 };

/**
 * Internal switch for scripts/cluster-batch-cost.mjs and the tests: false sends every group of
 * several slots as one script per slot (the fallback path, measured against node variants).
 */
export const nodeBatching = { enabled: true };

/** The node variant of each batched script, by the script's name. */
const variants = new Map<string, LuaScript>([
  [scripts.ledgerApply.name, scripts.ledgerApplyNode],
  [scripts.limiterTake.name, scripts.limiterTakeNode],
  [scripts.idempotencyBatch.name, scripts.idempotencyBatchNode],
]);

/** Runs a batch on one master: see {@link nodeRouter}. */
export interface NodeRouter {
  /** The batcher's group of a call, by its first key: its slot's master, or the slot if unknown. */
  groupOf(key: string): string | number;
  /**
   * Runs one group: `perSlot` for each slot's items (concurrently), or, when they span several
   * slots of one master, `perNode` for all of them on that master's connection. `perNode` throws
   * {@link NodeBatchRefused} (from {@link NodeRouter.eval}) when its script did not run, or may
   * have run and would be sent again by the Cluster client (a closed connection): the items then
   * go per slot, before any of them settles. Replies come back in the items' order.
   */
  run<I extends { readonly keys: readonly string[] }, R>(
    items: readonly I[],
    perSlot: (items: readonly I[]) => Promise<R[]>,
    perNode: (node: NodeClient, items: readonly I[]) => Promise<R[]>,
  ): Promise<R[]>;
  /** A node variant's call of `script` with the per-slot `keys` and `args` (see node-batch.lua). */
  eval(node: NodeClient, ...rest: EvalWaitedArgs): ReturnType<typeof evalWaited>;
}

/** {@link evalWaited}'s arguments after its client: the node variant's call takes the same. */
type EvalWaitedArgs = Parameters<typeof evalWaited> extends [RedisLike, ...infer R] ? R : never;

/** A master's own connection, bounded as the store's client, and the prefix it adds itself. */
export interface NodeClient {
  readonly client: RedisLike;
  readonly keyPrefix: string;
}

/**
 * The router of a store on `client`, or undefined when it is not an ioredis `Cluster` (one Redis
 * runs every batch whole). `timeoutMs`: the store's bound on every command's wait.
 */
export function nodeRouter(client: RedisLike, timeoutMs: number): NodeRouter | undefined {
  if ((client as { isCluster?: unknown }).isCluster !== true) return undefined;
  const cluster = client as RedisLike & ClusterLike;
  // The keyPrefix the Cluster adds to script KEYS; a master's connection adds its own (its
  // redisOptions'), which is either the same or none (clientKeyPrefix refuses any other).
  const keyPrefix = clientKeyPrefix(client);
  // Whether the servers run node variants: false once one refused the shebang (Redis before 7).
  let supported = true;
  // The masters' connections by node key, read again when one is missing or closed.
  const connections = new Map<string, NodeLike>();
  const bounded = new WeakMap<NodeLike, NodeClient>();
  const ownerOf = (slot: number): string | undefined => cluster.slots?.[slot]?.[0];

  const connectionOf = (key: string): NodeClient | undefined => {
    let node = connections.get(key);
    if (node === undefined || node.status === 'end') {
      connections.clear();
      for (const n of cluster.nodes?.('master') ?? [])
        connections.set(`${n.options?.host}:${n.options?.port}`, n);
      node = connections.get(key);
    }
    // Only a connected one: the Cluster client connects a master when it first sends it a command
    // (a per-slot script of this group, the first time).
    if (node === undefined || node.status !== 'ready') return undefined;
    let wrapped = bounded.get(node);
    if (wrapped === undefined) {
      const own = typeof node.options?.keyPrefix === 'string' ? node.options.keyPrefix : '';
      wrapped = { client: boundedClient(node, timeoutMs), keyPrefix: own === keyPrefix ? '' : keyPrefix };
      bounded.set(node, wrapped);
    }
    return wrapped;
  };

  const perSlotOf = async <I extends { readonly keys: readonly string[] }, R>(
    items: readonly I[],
    slots: I[][],
    perSlot: (items: readonly I[]) => Promise<R[]>,
  ): Promise<R[]> => {
    if (slots.length === 1) return perSlot(items);
    const replies = await Promise.all(slots.map((group) => perSlot(group)));
    const byItem = new Map<I, R>();
    for (const [g, group] of slots.entries()) {
      for (const [i, item] of group.entries()) byItem.set(item, (replies[g] as R[])[i] as R);
    }
    return items.map((item) => byItem.get(item) as R);
  };

  return {
    groupOf(key) {
      const slot = keySlot(key);
      return ownerOf(slot) ?? slot;
    },

    async run(items, perSlot, perNode) {
      const slots = groupBySlot(items, (item) => item.keys[0] as string);
      if (slots.length === 1 || !supported || !nodeBatching.enabled) return perSlotOf(items, slots, perSlot);
      // The master of every slot, as the client sees it now (the map may have changed since the
      // batcher grouped them): a group it splits goes per slot.
      const owner = ownerOf(keySlot(items[0]?.keys[0] as string));
      const node = owner === undefined ? undefined : connectionOf(owner);
      if (
        node === undefined ||
        slots.some((group) => ownerOf(keySlot(group[0]?.keys[0] as string)) !== owner)
      ) {
        return perSlotOf(items, slots, perSlot);
      }
      try {
        const replies = await perNode(node, items);
        nodeBatchCounts.node++;
        return replies;
      } catch (err) {
        if (!(err instanceof NodeBatchRefused)) throw err;
      }
      nodeBatchCounts.perSlot++;
      return perSlotOf(items, slots, perSlot);
    },

    async eval(node, durability, operation, calls, script, keys, args) {
      const variant = variants.get(script.name) as LuaScript;
      // Each entry's keys share a slot: checked in one EXISTS when their number is fixed.
      const argv: (string | number)[] = [keys.length, script.batched ? script.numberOfKeys : 1];
      for (const key of keys) argv.push(keyPrefix + key);
      for (const arg of args) argv.push(arg);
      try {
        return await evalWaited(
          node.client,
          durability,
          operation,
          calls,
          variant,
          [node.keyPrefix + keys[0]],
          argv,
        );
      } catch (err) {
        const message = err instanceof Error ? err.message : '';
        const reply = err instanceof Error && err.name === 'ReplyError';
        // Never given to the connection, or refused before it ran: nothing happened. Told apart
        // first: a refusal's message quotes a key, which may hold any text.
        if (err instanceof NotSentError || (reply && REFUSED.test(message)))
          throw new NodeBatchRefused(message, { cause: err });
        if (reply && NO_SHEBANG.test(message)) {
          supported = false;
          throw new NodeBatchRefused(message, { cause: err });
        }
        // The connection closed with the script in flight: it may have run. Only ledger-apply
        // answers a call it ran as it ran (its run and call number), so only its batch goes again
        // per slot; a limiter take or an idempotency step run twice would count twice or refuse
        // its own holder, so those callers get the failure (`unknown`: it may have run).
        if (message === CONNECTION_CLOSED) {
          nodeBatchCounts.closed++;
          if (script.name === scripts.ledgerApply.name) throw new NodeBatchRefused(message, { cause: err });
        }
        throw err;
      }
    },
  };
}
