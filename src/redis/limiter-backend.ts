import { StoreError } from '../core/errors.js';
import { codeOf } from '../limiter/algorithms.js';
import { limiterCost } from '../limiter/cost.js';
import { checkSpec } from '../limiter/options.js';
import { CLIENT_STATE_SLACK_MS, limiterTime, STATE_SLACK_MS } from '../limiter/time.js';
import type {
  LimitCall,
  LimiterTakeCommand,
  LimiterTakeReply,
  LimitSpec,
  LimitVerdict,
} from '../limiter/types.js';
import { verdict } from '../limiter/verdict.js';
import { type BatchItem, createBatcher } from './batcher.js';
import { evalScript, type RedisLike } from './eval.js';
import { scripts } from './scripts.generated.js';
import { groupBySlot } from './slot.js';
import { isClosedClient, redisStoreError } from './store-error.js';

// At most this many decisions per script call: a decision is one to three redis.call()s (~10-30 µs
// of server time here), so 128 hold the server for a few milliseconds at most.
const MAX_BATCH = 128;

/** One queued decision: its calls, keys (with the prefix), time ('' for Redis TIME) and cost. */
interface TakeItem extends BatchItem<LimiterTakeReply> {
  readonly limits: readonly LimitCall[];
  readonly now: number | '';
  readonly cost: number;
}

/** The limiter side of the Redis store. */
export interface RedisLimiterBackend {
  take(command: LimiterTakeCommand): Promise<LimiterTakeReply>;
  reset(namespace: string): Promise<number>;
  delete(keys: readonly string[]): Promise<number>;
}

/** What this backend pins on a cached call: the prefixed key, built once per subject. */
interface KeyMemo {
  readonly owner: object;
  readonly key: string;
}

// The script's values of a limit spec (algorithm, limit, window, param), built once per spec,
// when it is first checked (a spec a direct caller built may hold a fraction the script would
// write as a whole number, or a NaN: refused before its take joins a batch).
const specArgs = new WeakMap<LimitSpec, readonly (string | number)[]>();
function argsOf(spec: LimitSpec, path = 'limits[].spec'): readonly (string | number)[] {
  let args = specArgs.get(spec);
  if (args === undefined) {
    checkSpec(spec, path);
    args = [codeOf(spec), spec.limit, spec.windowMs, spec.param];
    specArgs.set(spec, args);
  }
  return args;
}

/** Internal: one decision per queued item; decisions of one hash slot share a script call. */
export function createRedisLimiterBackend(client: RedisLike, prefix: string): RedisLimiterBackend {
  const self = {};
  const keyOf = (call: LimitCall): string => {
    const memo = call.handle as KeyMemo | undefined;
    if (memo !== undefined && memo.owner === self) return memo.key;
    const key = prefix + call.key;
    call.handle = { owner: self, key } satisfies KeyMemo;
    return key;
  };

  const enqueue = createBatcher<LimiterTakeReply, TakeItem>({
    // Decisions need no order between batches (each is exact whenever it runs): pipelined.
    ordered: false,
    bySlot: (client as { isCluster?: unknown }).isCluster === true,
    maxBatch: MAX_BATCH,
    send(items) {
      // One StoreError for the batch, whatever failed (encoding, the script, the reply): each
      // caller's promise is settled straight from it, with no wrapper per take.
      const closed = isClosedClient(client);
      return sendBatch(items).catch((err: unknown) => {
        throw err instanceof StoreError ? err : redisStoreError('limiterTake', err, closed, 'script');
      });
    },
  });

  async function sendBatch(items: readonly TakeItem[]): Promise<LimiterTakeReply[]> {
    // The batch's distinct limit specs go first, once; each decision names them by index, so
    // a decision is 3 + limits values instead of 3 + 4 x limits (less to encode and parse).
    const specIndex = new Map<LimitSpec, number>();
    const specTable: (string | number)[] = [];
    const keys: string[] = [];
    const tail: (string | number)[] = [];
    for (const item of items) {
      for (const key of item.keys) keys.push(key);
      tail.push(item.now, item.cost, item.limits.length);
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
    // Every key's TTL gets the stores' slack (src/limiter/time.ts; the memory store keeps a state as
    // long): the TTL is garbage collection only, but a key dropped while a clock that stepped back
    // still counts its time would forget admissions.
    const args = JSON.stringify([
      STATE_SLACK_MS,
      CLIENT_STATE_SLACK_MS,
      specIndex.size,
      ...specTable,
      ...tail,
    ]);
    // One flat array of integers: each entry's 2 + 4 x limits values, in order.
    const flat = (await evalScript(client, scripts.limiterTake, keys, [args])) as number[];
    const replies: LimiterTakeReply[] = [];
    let at = 0;
    for (const item of items) {
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
    take({ limits, cost, now }) {
      // Checked before the call joins a batch: a time the script cannot number (see time.ts) or a
      // cost that is not a count would fail the script for every decision batched with it.
      const at = now === undefined ? '' : limiterTime(now, 'now');
      limiterCost(cost);
      const keys: string[] = [];
      for (let i = 0; i < limits.length; i++) {
        const call = limits[i] as LimitCall;
        argsOf(call.spec, `limits[${i}].spec`);
        keys.push(keyOf(call));
      }
      return new Promise<LimiterTakeReply>((resolve, reject) =>
        enqueue({ limits, keys, now: at, cost, resolve, reject }),
      );
    },

    delete(keys) {
      if (keys.length === 0) return Promise.resolve(0);
      // In call order with the takes (a barrier: after those called before, before those called
      // after), as the memory store does them; one UNLINK: a subject's keys share its hash tag.
      return enqueue.barrier(undefined, async () =>
        Number(await client.call('UNLINK', ...keys.map((key) => prefix + key))),
      );
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
        ? (client as unknown as { nodes(role: string): RedisLike[] }).nodes('master')
        : [client];
    // `{<ns>:` (one subject per decision) and `{<ns>}` (several): exactly this namespace's keys,
    // since escaped ids contain neither `:` nor `}` (src/limiter/keys.ts).
    const patterns = [`${globEscape(prefix)}{${namespace}:*`, `${globEscape(prefix)}{${namespace}}*`];
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
          // cluster node; a tenant's keys are one slot per subject): not a round trip per key.
          for (const keys of groupBySlot(found, (key) => key))
            removed += Number(await node.call('UNLINK', ...keys));
        } while (cursor !== '0');
      }
    }
    return removed;
  }
}

/** Escapes the glob characters of SCAN MATCH. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
