// limiterAdjust on Redis: one script call (limiter-adjust.lua) per command, in call order with
// the takes (a barrier of the take batcher, as a delete is), on the keys the takes use.
import { InvalidArgumentError } from '../core/errors.js';
import type { LimitCall, LimiterAdjustCommand, LimiterAdjustReply, LimitState } from '../store/limiter.js';
import { checkBlockMs, checkNotAfter, checkPoints } from '../windows/limits/adjust.js';
import { CLIENT_STATE_SLACK_MS, limiterTime, STATE_SLACK_MS } from '../windows/limits/time.js';
import { evalScript, type RedisLike } from './eval.js';
import { scripts } from './scripts.generated.js';

const OPS: readonly LimiterAdjustCommand['op'][] = ['get', 'delete', 'set', 'reward', 'penalty', 'block'];

/** What the adjust needs of the limiter ops: keys and script values per call, and their barrier. */
export interface AdjustParts {
  readonly keyOf: (namespace: string, call: LimitCall) => string;
  /** The spec's script values (code, limit, window, param, block ms), checked once per spec. */
  readonly argsOf: (spec: LimitCall['spec'], path: string) => readonly (string | number)[];
  readonly barrier: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** Internal: the Redis store's limiterAdjust. A malformed command rejects before any call. */
export function redisLimiterAdjust(
  redis: RedisLike,
  { keyOf, argsOf, barrier }: AdjustParts,
): (command: LimiterAdjustCommand) => Promise<LimiterAdjustReply> {
  return (command) => {
    let keys: string[];
    let args: string;
    try {
      const { namespace, limits, op, points, durationMs, now } = command;
      if (!OPS.includes(op)) throw new InvalidArgumentError('op', OPS.join(', '), op);
      if (!Array.isArray(limits)) throw new InvalidArgumentError('limits', 'an array of limit calls', limits);
      const at = now === undefined ? '' : limiterTime(now, 'now');
      const specs = limits.map((call, i) => {
        argsOf(call.spec, `limits[${i}].spec`);
        return call.spec;
      });
      const p = op === 'set' || op === 'reward' || op === 'penalty' ? checkPoints(points, specs) : 0;
      const ms = op === 'block' ? checkBlockMs(durationMs, 'durationMs') : 0;
      const notAfter = checkNotAfter(op, command.notAfter);
      keys = limits.map((call) => keyOf(namespace, call));
      const values: (string | number)[] = [op, p, ms, at, STATE_SLACK_MS, CLIENT_STATE_SLACK_MS];
      for (const spec of specs) values.push(...argsOf(spec, 'limits[].spec').slice(0, 4));
      values.push(notAfter ?? '');
      args = JSON.stringify(values);
    } catch (err) {
      return Promise.reject(err);
    }
    return barrier(async () => {
      if (keys.length === 0) {
        // No key to run on (a cluster routes a script by its keys): the time is the only answer.
        const [seconds, micros] = (await redis.call('TIME')) as [string, string];
        const t = command.now ?? Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
        return { now: t, states: [] };
      }
      const flat = (await evalScript(redis, scripts.limiterAdjust, keys, [args])) as number[];
      if (flat[0] === 1) {
        throw new InvalidArgumentError(
          'points',
          'a penalty that keeps usage x window at or below 2^52',
          command.points,
        );
      }
      const states: LimitState[] = [];
      for (let i = 2; i + 3 < flat.length; i += 4) {
        states.push({
          used: flat[i] as number,
          remaining: flat[i + 1] as number,
          resetAt: flat[i + 2] as number,
          blockedUntil: flat[i + 3] as number,
        });
      }
      return { now: flat[1] as number, states };
    });
  };
}
