// limiterAdjust on PostgreSQL: one statement, limiter_adjust (migration 005), which locks the
// rows as limiter_take does and runs the operation on them; after every take sent before it.
import { InvalidArgumentError } from '../core/errors.js';
import type { LimitCall, LimiterAdjustCommand, LimiterAdjustReply, LimitState } from '../store/limiter.js';
import { checkBlockMs, checkNotAfter, checkPoints } from '../windows/limits/adjust.js';
import { ALGORITHM_CODE } from '../windows/limits/algorithms.js';
import { checkSpec } from '../windows/limits/spec.js';
import { CLIENT_STATE_SLACK_MS, limiterTime, STATE_SLACK_MS } from '../windows/limits/time.js';
import type { PgContext } from './context.js';
import { statementName } from './pg-args.js';

const OPS: readonly LimiterAdjustCommand['op'][] = ['get', 'delete', 'set', 'reward', 'penalty', 'block'];

/** Internal: the PostgreSQL store's limiterAdjust. A malformed command rejects before any SQL. */
export function postgresLimiterAdjust(
  ctx: PgContext,
  keysOf: (namespace: unknown, limits: readonly LimitCall[]) => string[],
  afterTakes: <T>(run: () => Promise<T>) => Promise<T>,
): (command: LimiterAdjustCommand) => Promise<LimiterAdjustReply> {
  const s = ctx.schema;
  const statement = {
    name: statementName(s, 'limiter-adjust'),
    text: `SELECT * FROM ${s}.limiter_adjust($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text, $7::bigint, $8::bigint, $9::bigint, $10::bigint)`,
  };
  // A reward with a deadline: the rows are locked first (in key order, as every limiter function
  // locks them), then the time is read once and given to the function, so the check against the
  // deadline and the reward are at one instant, and no charge committed before it is newer than
  // it (a reward re-dates what is left to its time: it must not move a newer charge back). Past
  // the deadline the function runs a 'get'.
  const bounded = {
    name: statementName(s, 'limiter-adjust-bounded'),
    text: `WITH l AS (SELECT s.key FROM ${s}.limiter_state AS s WHERE s.key = ANY ($1::text[]) ORDER BY s.key FOR UPDATE),
      c AS (SELECT coalesce($9::bigint, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) AS t
        FROM (SELECT count(*) FROM l) AS n)
      SELECT f.* FROM c, LATERAL ${s}.limiter_adjust($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[],
        CASE WHEN c.t >= $11::bigint THEN 'get' ELSE $6::text END, $7::bigint, $8::bigint, c.t, $10::bigint) f`,
  };
  return (command) => {
    let values: unknown[];
    let notAfter: number | undefined;
    try {
      const { namespace, limits, op, points, durationMs, now } = command;
      if (!OPS.includes(op)) throw new InvalidArgumentError('op', OPS.join(', '), op);
      const keys = keysOf(namespace, limits);
      const at = now === undefined ? null : limiterTime(now, 'now');
      const specs = limits.map((call, i) => {
        checkSpec(call.spec, `limits[${i}].spec`);
        return call.spec;
      });
      const p = op === 'set' || op === 'reward' || op === 'penalty' ? checkPoints(points, specs) : 0;
      const ms = op === 'block' ? checkBlockMs(durationMs, 'durationMs') : 0;
      notAfter = checkNotAfter(op, command.notAfter);
      values = [
        keys,
        specs.map((x) => ALGORITHM_CODE[x.algorithm]),
        specs.map((x) => x.limit),
        specs.map((x) => x.windowMs),
        specs.map((x) => x.param),
        op,
        p,
        ms,
        at,
        at === null ? STATE_SLACK_MS : CLIENT_STATE_SLACK_MS,
      ];
      if (notAfter !== undefined) values.push(notAfter);
    } catch (err) {
      return Promise.reject(err);
    }
    return afterTakes(async () => {
      const row = (
        await ctx.query('limiterAdjust', 'write', {
          ...(notAfter === undefined ? statement : bounded),
          values,
        })
      )[0] as Record<string, unknown>;
      if (Number(row.o_status) === 1) {
        throw new InvalidArgumentError(
          'points',
          'a penalty that keeps usage x window at or below 2^52',
          command.points,
        );
      }
      const used = row.o_used as string[];
      const remaining = row.o_remaining as string[];
      const resets = row.o_reset as string[];
      const blocked = row.o_blocked as string[];
      const states: LimitState[] = used.map((u, i) => ({
        used: Number(u),
        remaining: Number(remaining[i]),
        resetAt: Number(resets[i]),
        blockedUntil: Number(blocked[i]),
      }));
      return { now: Number(row.o_now), states };
    });
  };
}
