import { ClockOffset } from '../core/clock-offset.js';
import { StoreError } from '../core/errors.js';
import type {
  LimitCall,
  LimiterAdjustCommand,
  LimiterAdjustReply,
  LimiterDeleteCommand,
  LimiterTakeCommand,
  LimiterTakeReply,
} from '../store/limiter.js';
import { codeOf } from '../windows/limits/algorithms.js';
import { limiterCost } from '../windows/limits/cost.js';
import { checkSpec } from '../windows/limits/spec.js';
import { CLIENT_STATE_SLACK_MS, limiterTime, STATE_SLACK_MS } from '../windows/limits/time.js';
import type { LimitSpec, LimitVerdict } from '../windows/limits/types.js';
import { verdict } from '../windows/limits/verdict.js';
import { type BatchItem, createBatcher } from './batcher.js';
import { boundedClient, NotSentError } from './bounded-client.js';
import { clientCommandTimeout } from './client-options.js';
import { evalScript, type RedisLike } from './eval.js';
import { redisLimiterAdjust } from './limiter-adjust.js';
import { limiterKey, namespaceTag } from './limiter-keys.js';
import type { NodeClient, NodeRouter } from './node-batch.js';
import { scripts } from './scripts.generated.js';
import { groupBySlot } from './slot.js';
import { isClosedClient, redisStoreError } from './store-error.js';

// At most this many decisions per script call: a decision is one to three redis.call()s (a few µs
// to ~30 µs of server time, the most for a long sliding log: scripts/limiter-lua-ab.mjs on the
// limiter bench's workload, scripts/sliding-log-cost.mjs by limit), so 128 hold the server for a
// few milliseconds at most.
const MAX_BATCH = 128;

// Fencing: a take answered without the store (the limiter's timeout ran out, or the client
// rejected the command) must never be charged when its command reaches Redis later: from
// ioredis's offline queue once it reconnects, from its re-sent unfulfilled commands, from a
// socket buffer a stalled server reads on waking, after a `commandTimeout` that rejected the
// command but left it queued. Which of those applies depends on the client's options and version,
// so none is relied on. Instead each take has a fence, the local instant past which its caller
// may be answered without the store (now + the shortest of the limiter's timeout, the store's
// timeout and the client's commandTimeout), and two rules hold:
//   1. The script decides an entry only while Redis's TIME is before the entry's fence, which is
//      sent in Redis time: fence + `offset` - FENCE_MARGIN_MS. `offset` is a lower bound of
//      (Redis ms - performance.now()), learnt from the replies (src/core/clock-offset.ts). A
//      later execution is a no-op.
//   2. This backend never reports a failure of a fenced take before its fence, unless Redis
//      answered (an error reply: the command ran and is gone). A failure the client reports
//      earlier (a closed connection, a timeout) is held until the fence: the command may still
//      be somewhere in the client. One the store never gave to the client (NotSentError, see
//      bounded-client.ts) is nowhere, and fails at once.
// So when the caller is answered without the store (at or after the fence), Redis can no longer
// charge it. What no fence can help: a command Redis ran before its fence whose reply was lost
// (the charge happened before the answer, not after). And a take made while the connection is
// known lost (it was ready, and is not now) is not sent at all: refused at once, it never sits
// in a queue and its caller need not wait for the fence.
//
// The margin covers what makes a late execution look early: Redis's TIME floored to the ms (1 ms),
// a Node timer firing up to 1 ms before performance.now() says its delay passed (libuv's ms loop
// time), the drift of two quartz clocks between replies (~100 ppm: 1 ms per 10 s without a reply),
// and servers behind one client (cluster nodes, a promoted replica) whose NTP-kept clocks agree to
// a ms or two. The offset is learned from the one that answered: the rule assumes the others'
// clocks agree with it within the margin. Too large a margin only refuses takes that reached
// Redis just before their caller gave up on them (their answer was about to be too late anyway).
const FENCE_MARGIN_MS = 5;

/** One queued decision: its calls, keys (with the prefix), time ('' for Redis TIME) and cost. */
interface TakeItem extends BatchItem<LimiterTakeReply> {
  readonly limits: readonly LimitCall[];
  readonly now: number | '';
  readonly cost: number;
  /** performance.now() past which its caller may be answered without the store; Infinity: none. */
  readonly fence: number;
  /** Settles it as not decided (Redis read it past its fence): at once, never held. */
  readonly refuse: (err: unknown) => void;
}

// The reply given to a take settled by `refuse` (the batcher still resolves it: a no-op).
const NOT_DECIDED: LimiterTakeReply = Object.freeze({ now: 0, allowed: false, verdicts: [] });

/** The limiter side of the Redis store. */
export interface RedisLimiterOps {
  take(command: LimiterTakeCommand): Promise<LimiterTakeReply>;
  adjust(command: LimiterAdjustCommand): Promise<LimiterAdjustReply>;
  reset(namespace: string): Promise<number>;
  delete(command: LimiterDeleteCommand): Promise<number>;
}

/** A call's prefixed key, kept per call object with the namespace it was built for. */
interface KeyMemo {
  readonly namespace: string;
  readonly key: string;
}

// The script's values of a limit spec (algorithm, limit, window, param), built once per spec,
// when it is first checked (a spec a direct caller built may hold a fraction the script would
// write as a whole number, or a NaN: refused before its take joins a batch).
const specArgs = new WeakMap<LimitSpec, readonly (string | number)[]>();
export function argsOf(spec: LimitSpec, path = 'limits[].spec'): readonly (string | number)[] {
  let args = specArgs.get(spec);
  if (args === undefined) {
    checkSpec(spec, path);
    args = [codeOf(spec), spec.limit, spec.windowMs, spec.param, spec.blockMs ?? 0];
    specArgs.set(spec, args);
  }
  return args;
}

/**
 * Internal: one decision per queued item; decisions of one hash slot share a script call (on a
 * cluster, decisions of one master: `nodes`, node-batch.ts).
 */
export function redisLimiterOps(
  client: RedisLike,
  prefix: string,
  {
    keyPrefix,
    timeoutMs: storeTimeoutMs,
    nodes,
  }: { readonly keyPrefix: string; readonly timeoutMs: number; readonly nodes?: NodeRouter | undefined },
): RedisLimiterOps {
  // Every command's wait bounded by the store's timeout (see bounded-client.ts).
  const redis = boundedClient(client, storeTimeoutMs);
  // The client's own command timeout (ioredis `Redis`, or a `Cluster`'s redisOptions): it rejects a
  // command that may still be sent later, so it bounds a take's fence too.
  const clientTimeoutMs = clientCommandTimeout(client);
  // A lower bound of (Redis ms - performance.now()) (see rule 1 above). The first fenced batch
  // waits for one TIME: a fence cannot be sent in Redis time before the offset is known (guessed
  // from the wall clock, a Redis clock behind this one would charge late commands). Shared by the
  // batches sent meanwhile; a failure fails them (and is tried again).
  const offset = new ClockOffset();
  const readTime = async (): Promise<number> => {
    const [seconds, micros] = (await redis.call('TIME')) as [string, string];
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  let wasReady = false;
  // Each call's prefixed key, built once per call object (the limiter keeps its calls per subject).
  const keys = new WeakMap<LimitCall, KeyMemo>();

  // The connection is known lost: an ioredis client that was ready and is not (reconnecting, or
  // ended). A client never seen ready (still connecting at startup) is not: its first commands
  // wait in the offline queue, fenced.
  const connectionLost = (): boolean => {
    const status = (client as { status?: unknown }).status;
    if (typeof status !== 'string' || status === 'ready') {
      if (status === 'ready') wasReady = true;
      return false;
    }
    return wasReady || status === 'end';
  };
  const keyOf = (namespace: string, call: LimitCall): string => {
    const memo = keys.get(call);
    if (memo !== undefined && memo.namespace === namespace) return memo.key;
    const key = prefix + limiterKey(namespaceTag(namespace), call);
    keys.set(call, { namespace, key });
    return key;
  };

  const enqueue = createBatcher<LimiterTakeReply, TakeItem>({
    // Decisions need no order between batches (each is exact whenever it runs): pipelined.
    ordered: false,
    groupOf: nodes?.groupOf,
    maxBatch: MAX_BATCH,
    send(items) {
      // One StoreError for the batch, whatever failed (encoding, the script, the reply): each
      // caller's promise is settled straight from it, with no wrapper per take.
      const closed = isClosedClient(client);
      const sent =
        nodes === undefined
          ? sendBatch(items)
          : nodes.run(items, sendBatch, (node, all) => sendBatch(all, node));
      return sent.catch((err: unknown) => {
        throw err instanceof StoreError ? err : redisStoreError('limiterTake', err, closed, 'script');
      });
    },
  });

  // One script call for `items`: limiter-take.lua, or with `node` its node variant on that master
  // (which throws NodeBatchRefused, settling nothing, when it did not run).
  async function sendBatch(items: readonly TakeItem[], node?: NodeClient): Promise<LimiterTakeReply[]> {
    let fenceBase = 0;
    for (const item of items) {
      if (item.fence !== Number.POSITIVE_INFINITY) {
        if (offset.value === undefined) {
          // A failed TIME is a failed read: the script was not sent, nothing was charged.
          const closed = isClosedClient(client);
          await offset.probe(readTime).catch((err: unknown) => {
            throw redisStoreError('limiterTake', err, closed, 'read');
          });
        }
        fenceBase = Number.POSITIVE_INFINITY;
        break;
      }
    }
    // Each fenced entry's fence in Redis ms (rule 1), sent as a difference from the batch's base
    // (a few digits, where a whole time is 13).
    const fences: number[] = [];
    if (fenceBase !== 0) {
      for (const item of items) {
        const fence =
          item.fence === Number.POSITIVE_INFINITY
            ? 0
            : Math.floor(item.fence + (offset.value as number) - FENCE_MARGIN_MS);
        fences.push(fence);
        if (fence !== 0 && fence - 1 < fenceBase) fenceBase = fence - 1;
      }
    }
    // The batch's distinct limit specs go first, once; each decision names them by index, so
    // a decision is 3 + limits values instead of 3 + 4 x limits (less to encode and parse).
    const specIndex = new Map<LimitSpec, number>();
    const specTable: (string | number)[] = [];
    const keys: string[] = [];
    const tail: (string | number)[] = [];
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as TakeItem;
      for (const key of item.keys) keys.push(key);
      const fence = fenceBase === 0 ? 0 : (fences[i] as number);
      tail.push(item.now, item.cost, fence === 0 ? 0 : fence - fenceBase, item.limits.length);
      for (const { spec } of item.limits) {
        let index = specIndex.get(spec);
        if (index === undefined) {
          index = specIndex.size + 1;
          specIndex.set(spec, index);
          for (const arg of argsOf(spec)) specTable.push(arg);
        }
        tail.push(index);
      }
    }
    // Every key's TTL gets the stores' slack (src/windows/limits/time.ts; the memory store keeps a state as
    // long): the TTL is garbage collection only, but a key dropped while a clock that stepped back
    // still counts its time would forget admissions.
    const head = [STATE_SLACK_MS, CLIENT_STATE_SLACK_MS, fenceBase, specIndex.size];
    const args = JSON.stringify([...head, ...specTable, ...tail]);
    // One flat array of integers: the server's TIME (0: not read), then each entry's 2 + 4 x
    // limits values, in order.
    const sent = performance.now();
    const flat = (
      node === undefined || nodes === undefined
        ? await evalScript(redis, scripts.limiterTake, keys, [args])
        : (await nodes.eval(node, undefined, 'limiterTake', items.length, scripts.limiterTake, keys, [args]))
            .reply
    ) as number[];
    if ((flat[0] as number) > 0) offset.learn(flat[0] as number, sent, performance.now());
    const replies: LimiterTakeReply[] = [];
    let at = 1;
    for (const item of items) {
      if (flat[at + 1] === 2) {
        // The script ran and charged nothing: certain, and a take called again may be decided.
        item.refuse(
          new StoreError('limiterTake', new Error('reached Redis past its fence: not decided, not charged'), {
            outcome: 'not-applied',
            retriable: true,
          }),
        );
        replies.push(NOT_DECIDED);
        at += 2 + 4 * item.limits.length;
        continue;
      }
      const verdicts: LimitVerdict[] = [];
      for (let j = 0; j < item.limits.length; j++) {
        const o = at + 2 + 4 * j;
        const retry = flat[o + 3] as number;
        const spec = (item.limits[j] as LimitCall).spec;
        verdicts.push(
          verdict(
            spec,
            flat[o] === 1,
            flat[o + 1] as number,
            flat[o + 2] as number,
            retry < 0 ? Number.POSITIVE_INFINITY : retry,
          ),
        );
      }
      replies.push({ now: flat[at] as number, allowed: flat[at + 1] === 1, verdicts });
      at += 2 + 4 * item.limits.length;
    }
    return replies;
  }

  return {
    adjust: redisLimiterAdjust(redis, {
      keyOf,
      argsOf,
      barrier: (fn) => enqueue.barrier(undefined, fn),
    }),

    take({ namespace, limits, cost, now, timeoutMs }) {
      // Checked before the call joins a batch: a time the script cannot number (see time.ts) or a
      // cost that is not a count would fail the script for every decision batched with it.
      const at = now === undefined ? '' : limiterTime(now, 'now');
      limiterCost(cost);
      const keys: string[] = [];
      for (let i = 0; i < limits.length; i++) {
        const call = limits[i] as LimitCall;
        argsOf(call.spec, `limits[${i}].spec`);
        keys.push(keyOf(namespace, call));
      }
      const waitMs = timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs : Number.POSITIVE_INFINITY;
      const within = Math.min(waitMs, clientTimeoutMs, storeTimeoutMs);
      if (within === Number.POSITIVE_INFINITY) {
        // Unfenced (a backend made with no store timeout): the caller waits for whatever the
        // client answers, and a client without a timeout of its own rejects a command only once
        // it dropped it (never to send it later).
        return new Promise<LimiterTakeReply>((resolve, reject) =>
          enqueue({ limits, keys, now: at, cost, fence: within, resolve, reject, refuse: reject }),
        );
      }
      if (connectionLost()) {
        const status = String((client as { status?: unknown }).status);
        // Never given to the client: it cannot run. A closed client ('end') refuses every take.
        return Promise.reject(
          new StoreError(
            'limiterTake',
            new Error(`the Redis connection is ${status}: the take was not sent`),
            {
              outcome: 'not-applied',
              retriable: status !== 'end',
            },
          ),
        );
      }
      const fence = performance.now() + within;
      return new Promise<LimiterTakeReply>((resolve, reject) =>
        enqueue({
          limits,
          keys,
          now: at,
          cost,
          fence,
          resolve,
          reject: (err) => holdUntil(fence, err, reject),
          refuse: reject,
        }),
      );
    },

    delete({ namespace, limits }) {
      if (limits.length === 0) return Promise.resolve(0);
      const tag = namespaceTag(namespace);
      const keys = limits.map((call) => prefix + limiterKey(tag, call));
      // In call order with the takes (a barrier: after those called before, before those called
      // after), as the memory store does them; a subject's keys share its hash tag. The limits'
      // blocks ('<key>|b', limiter-block.lua) go too; the count is of the states.
      return enqueue.barrier(undefined, async () => {
        const n = Number(await redis.call('UNLINK', ...keys));
        await redis.call('UNLINK', ...keys.map((key) => `${key}|b`));
        return n;
      });
    },

    reset(namespace) {
      // After the takes called before it (see delete); a SCAN of the keyspace can take seconds, so
      // takes called meanwhile are not held (one that lands on a key before the SCAN reaches it is
      // forgotten with the rest: a reset forgets usage, it never charges any).
      return enqueue.barrier(undefined, () => resetNamespace(namespace), false);
    },
  };

  async function resetNamespace(namespace: string): Promise<number> {
    const nodes =
      typeof (client as { nodes?: unknown }).nodes === 'function'
        ? (client as unknown as { nodes(role: string): RedisLike[] })
            .nodes('master')
            .map((node) => boundedClient(node, storeTimeoutMs))
        : [redis];
    // `{<tag>:` (one subject per decision) and `{<tag>}` (several): exactly this namespace's keys
    // (see limiter-keys.ts). A SCAN pattern is not prefixed by the client and a SCAN answers keys
    // as stored: the pattern carries the client's keyPrefix, and the keys found lose it before
    // the client prefixes them again in UNLINK.
    const base = globEscape(keyPrefix + prefix);
    const tag = namespaceTag(namespace);
    const patterns = [`${base}{${tag}:*`, `${base}{${tag}}*`];
    let removed = 0;
    for (const node of nodes) {
      for (const pattern of patterns) {
        let cursor = '0';
        do {
          const [next, found] = (await node.call('SCAN', cursor, 'MATCH', pattern, 'COUNT', 1000)) as [
            string,
            string[],
          ];
          cursor = next;
          // One UNLINK per hash slot found (keys of different slots cannot share a command on a
          // cluster; a tenant's keys are one slot per subject): not a round trip per key. Sent
          // through the client, which routes it by slot (a node's client may prefix otherwise).
          for (const keys of groupBySlot(found, (key) => key))
            removed += Number(await redis.call('UNLINK', ...keys.map((key) => key.slice(keyPrefix.length))));
        } while (cursor !== '0');
      }
    }
    return removed;
  }
}

/**
 * Rejects with `err` once `fence` (performance.now()) has passed (rule 2 above), or at once when
 * Redis answered it: an error reply means the command ran, and nothing of it is left to run later.
 */
function holdUntil(fence: number, err: unknown, reject: (err: unknown) => void): void {
  const wait = fence - performance.now();
  const cause = err instanceof StoreError ? err.cause : err;
  if (wait <= 0 || (cause instanceof Error && cause.name === 'ReplyError') || cause instanceof NotSentError) {
    reject(err);
    return;
  }
  // +1: a timer may fire up to 1 ms early (see FENCE_MARGIN_MS).
  setTimeout(() => reject(err), Math.ceil(wait) + 1);
}

/** Escapes the glob characters of SCAN MATCH. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
