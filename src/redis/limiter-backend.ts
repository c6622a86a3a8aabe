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

/** The limiter side of the Redis store. */
export interface RedisLimiterBackend {
  take(command: LimiterTakeCommand): Promise<LimiterTakeReply>;
  reset(namespace: string): Promise<number>;
}

/** Internal: one decision per queued item; decisions of one hash slot share a script call. */
export function createRedisLimiterBackend(client: RedisLike, prefix: string): RedisLimiterBackend {
  const enqueue = createBatcher<(string | number)[], BatchItem<(string | number)[]>>({
    bySlot: (client as { isCluster?: unknown }).isCluster === true,
    maxBatch: MAX_BATCH,
    async send(items) {
      return (await evalScript(
        client,
        scripts.limiterTake,
        items.flatMap((i) => i.keys),
        [String(TTL_SLACK_MS), ...items.flatMap((i) => i.args)],
      )) as (string | number)[][];
    },
  });

  return {
    async take({ limits, cost, now }) {
      const keys: string[] = [];
      const args: string[] = [now === undefined ? '' : String(now), String(cost), String(limits.length)];
      for (const { spec, key } of limits) {
        keys.push(prefix + key);
        if (spec.algorithm === 'sliding-log') keys.push(`${prefix}${key}:h`);
        args.push(
          ALGORITHM_CODE[spec.algorithm],
          String(spec.limit),
          String(spec.windowMs),
          String(spec.param),
        );
      }
      const reply = await new Promise<(string | number)[]>((resolve, reject) =>
        enqueue({ keys, args, resolve, reject }),
      );
      const verdicts: Verdict[] = [];
      for (let i = 2; i < reply.length; i += 4) {
        const retry = Number(reply[i + 3]);
        verdicts.push({
          allowed: Number(reply[i]) === 1,
          remaining: Number(reply[i + 1]),
          resetAt: Number(reply[i + 2]),
          retryAfterMs: retry < 0 ? Number.POSITIVE_INFINITY : retry,
        });
      }
      return { now: Number(reply[0]), allowed: Number(reply[1]) === 1, verdicts };
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
