import { ALGORITHM_CODE } from '../limiter/algorithms.js';
import type { LimiterTakeCommand, LimiterTakeReply, Verdict } from '../limiter/types.js';
import { type BatchItem, createBatcher } from './batcher.js';
import { evalScript, type RedisLike } from './eval.js';
import { scripts } from './scripts.generated.js';

// At most this many decisions per script call: a decision is a few redis.call()s (~2-5 µs of
// server time), so 128 hold the server well under a millisecond, and 128 x (3 + 4 x limits)
// arguments stay far below Lua's unpack limit (~8000 values).
const MAX_BATCH = 128;

// Added to every key's TTL. In client-clock mode time comes from the callers, whose clocks may
// run ahead of or behind Redis's TTL clock; 1 s covers any NTP-synchronised skew (typically
// < 100 ms) ten times over, so a key is never dropped while a caller's time still counts it.
// The TTL is garbage collection only: a state read after its time decides as empty.
const TTL_SLACK_MS = 1000;

/** One queued decision: its keys and arguments, and how many limits its reply covers. */
interface TakeItem extends BatchItem<number[]> {
  readonly limits: number;
}

/** The limiter side of the Redis store. */
export interface RedisLimiterBackend {
  take(command: LimiterTakeCommand): Promise<LimiterTakeReply>;
  reset(namespace: string): Promise<number>;
}

/** Internal: one decision per queued item; decisions of one hash slot share a script call. */
export function createRedisLimiterBackend(client: RedisLike, prefix: string): RedisLimiterBackend {
  const enqueue = createBatcher<number[], TakeItem>({
    bySlot: (client as { isCluster?: unknown }).isCluster === true,
    maxBatch: MAX_BATCH,
    async send(items) {
      const keys: string[] = [];
      const args: string[] = [String(TTL_SLACK_MS)];
      for (const item of items) {
        for (const key of item.keys) keys.push(key);
        for (const arg of item.args) args.push(arg);
      }
      // One flat array of integers: each entry's 2 + 4 x limits values, in order.
      const flat = (await evalScript(client, scripts.limiterTake, keys, args)) as number[];
      const replies: number[][] = [];
      let at = 0;
      for (const item of items) {
        const size = 2 + 4 * item.limits;
        replies.push(flat.slice(at, at + size));
        at += size;
      }
      return replies;
    },
  });

  return {
    async take({ limits, cost, now }) {
      const keys: string[] = [];
      const args: string[] = [now === undefined ? '' : String(now), String(cost), String(limits.length)];
      for (const { spec, key } of limits) {
        keys.push(prefix + key);
        args.push(
          ALGORITHM_CODE[spec.algorithm],
          String(spec.limit),
          String(spec.windowMs),
          String(spec.param),
        );
      }
      const reply = await new Promise<number[]>((resolve, reject) =>
        enqueue({ keys, args, limits: limits.length, resolve, reject }),
      );
      const verdicts: Verdict[] = [];
      for (let i = 2; i < reply.length; i += 4) {
        const retry = reply[i + 3] as number;
        verdicts.push({
          allowed: reply[i] === 1,
          remaining: reply[i + 1] as number,
          resetAt: reply[i + 2] as number,
          retryAfterMs: retry < 0 ? Number.POSITIVE_INFINITY : retry,
        });
      }
      return { now: reply[0] as number, allowed: reply[1] === 1, verdicts };
    },

    async reset(namespace) {
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
            // One UNLINK per key: keys of different slots cannot share a command on a cluster node.
            for (const key of found) removed += Number(await node.call('UNLINK', key));
          } while (cursor !== '0');
        }
      }
      return removed;
    },
  };
}

/** Escapes the glob characters of SCAN MATCH. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
