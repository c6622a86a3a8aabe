import { ClockOffset } from '../core/clock-offset.js';
import { InvalidArgumentError, StoreError } from '../core/errors.js';
import { isPlainObject, isWellFormed } from '../core/validate.js';
import { limiterKey, namespaceTag } from '../redis/limiter-keys.js';
import type {
  LimitCall,
  LimiterDeleteCommand,
  LimiterTakeCommand,
  LimiterTakeReply,
} from '../store/limiter.js';
import { ALGORITHM_CODE } from '../windows/limits/algorithms.js';
import { limiterCost } from '../windows/limits/cost.js';
import { checkSpec } from '../windows/limits/spec.js';
import { CLIENT_STATE_SLACK_MS, limiterTime, STATE_SLACK_MS } from '../windows/limits/time.js';
import type { LimitSpec, LimitVerdict } from '../windows/limits/types.js';
import { verdict } from '../windows/limits/verdict.js';
import type { PgContext } from './context.js';
import { postgresLimiterAdjust } from './limiter-adjust.js';
import type { PgCleanup, PgLimiterOps } from './ops.js';
import { statementName } from './pg-args.js';
import { sqlState } from './pg-error.js';

// A row's key is the key the Redis store gives the same state (src/redis/limiter-keys.ts): one
// layout for both, so the rows mean what they meant when the limiter built the keys itself, and
// a reset is two ranges of it. It is the primary key of limiter_state, a btree: PostgreSQL
// refuses an index entry over 2704 bytes (a third of an 8 KB page, minus headers), failing the
// statement. 2600 bytes leaves room for the tuple header and is still far above the longest key
// the limiter builds for bounded input (namespace `|l:` + a 256-byte name escaped to at most 768,
// a 512-byte subject to at most 1536, a limit id and the shape suffix: ~2.4 KB only when every
// byte is escaped).
const MAX_KEY_BYTES = 2600;

// The deadline the function checks (see limiter_take in sql/002-limiter.sql) is sent on the
// database's clock, learnt from replies as the Redis store learns its server's (ClockOffset;
// redis/limiter-ops.ts, FENCE_MARGIN_MS): the margin covers the database clock floored to the ms
// (1 ms), a Node timer firing up to 1 ms before performance.now() says its delay passed, and the
// drift of two quartz clocks between replies (~100 ppm: 1 ms per 10 s without one). Too large a
// margin only refuses takes that reached the database just before their caller gave up.
const FENCE_MARGIN_MS = 5;

// The SQLSTATE limiter_take raises when it locked its keys past the deadline (rolled back whole).
const PAST_DEADLINE = 'OFL01';

// Specs checked once each (the limiter's own come from toSpec, shared by every take).
const checkedSpecs = new WeakSet<LimitSpec>();

/**
 * The limiter part of the Postgres store: a take is one statement, `limiter_take` (migration
 * 002), which locks the take's keys in key order, decides every limit with the same integer math
 * as the memory store and charges all limits or none: one round trip, one transaction. Deletes
 * and resets are one statement each too, after every take this part sent before them.
 */
export function postgresLimiterOps(ctx: PgContext): PgLimiterOps {
  const s = ctx.schema;
  const take = {
    name: statementName(s, 'limiter-take'),
    text: `SELECT * FROM ${s}.limiter_take($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint, $7::bigint, $8::bigint, $9::bigint, $10::bigint[])`,
  };
  const del = {
    name: statementName(s, 'limiter-delete'),
    text: `SELECT ${s}.limiter_delete($1::text[]) AS n`,
  };
  const reset = {
    name: statementName(s, 'limiter-reset'),
    text: `SELECT ${s}.limiter_reset($1::text, $2::text, $3::text, $4::text) AS n`,
  };
  const clock = {
    name: statementName(s, 'limiter-clock'),
    text: 'SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms',
  };

  // A lower bound of (database ms - performance.now()), from the replies (the Redis store's rule 1).
  const offset = new ClockOffset();
  const readClock = async (): Promise<number> =>
    Number((await ctx.query('limiterTake', 'read', clock))[0]?.ms);

  // Takes sent and not yet answered, and the delete or reset the takes called after it wait for:
  // a delete runs after the takes called before it and before those called after it, as the
  // memory store does them (a statement each, on any of the pool's connections, would not be).
  const inflight = new Set<Promise<unknown>>();
  let barrier: Promise<unknown> | undefined;
  const track = <T>(p: Promise<T>): Promise<T> => {
    inflight.add(p);
    const done = () => inflight.delete(p);
    p.then(done, done);
    return p;
  };
  const afterTakes = <T>(run: () => Promise<T>): Promise<T> => {
    const before = [...inflight, ...(barrier === undefined ? [] : [barrier])];
    const p = Promise.allSettled(before).then(run);
    const gate = p.then(
      () => undefined,
      () => undefined,
    );
    barrier = gate;
    void gate.then(() => {
      if (barrier === gate) barrier = undefined;
    });
    return p;
  };

  async function decide(
    limits: readonly LimitCall[],
    values: unknown[],
    fence: number,
  ): Promise<LimiterTakeReply> {
    if (fence !== Number.POSITIVE_INFINITY) {
      if (offset.value === undefined) await offset.probe(readClock);
      values[7] = Math.floor(fence + (offset.value as number)) - FENCE_MARGIN_MS;
    }
    const sent = performance.now();
    let rows: Record<string, unknown>[];
    try {
      rows = await ctx.query('limiterTake', 'write', { ...take, values });
    } catch (err) {
      if (err instanceof StoreError && sqlState(err.cause) === PAST_DEADLINE) {
        throw new StoreError(
          'limiterTake',
          new Error('reached PostgreSQL past its deadline: not decided, not charged'),
          { outcome: 'not-applied', retriable: false },
        );
      }
      throw err;
    }
    const row = rows[0] as Record<string, unknown>;
    offset.learn(Number(row.o_db), sent, performance.now());
    const allowed = row.o_allowed as boolean[];
    const remaining = row.o_remaining as string[];
    const resets = row.o_reset as string[];
    const retries = row.o_retry as string[];
    const verdicts: LimitVerdict[] = new Array(limits.length);
    for (let i = 0; i < limits.length; i++) {
      const retry = Number(retries[i]);
      verdicts[i] = verdict(
        (limits[i] as LimitCall).spec,
        allowed[i] === true,
        Number(remaining[i]),
        Number(resets[i]),
        retry < 0 ? Number.POSITIVE_INFINITY : retry,
      );
    }
    return { now: Number(row.o_now), allowed: row.o_outcome === 1, verdicts };
  }

  return {
    limiterTake(command: LimiterTakeCommand): Promise<LimiterTakeReply> {
      let values: unknown[];
      try {
        values = takeValues(command);
      } catch (err) {
        return Promise.reject(err);
      }
      const { limits, timeoutMs } = command;
      const fence =
        typeof timeoutMs === 'number' && timeoutMs > 0
          ? performance.now() + timeoutMs
          : Number.POSITIVE_INFINITY;
      const run = () => decide(limits, values, fence);
      const answer = track(barrier === undefined ? run() : barrier.then(run));
      if (fence === Number.POSITIVE_INFINITY) return answer;
      // A failure of a fenced take is reported no earlier than its fence unless the server
      // answered (an error with a SQLSTATE: the statement ran and was rolled back): a statement
      // the client lost track of may still run, and must run before its caller is answered
      // without the store, never after (the Redis store's rule 2).
      return answer.catch((err: unknown) => holdUntil(fence, err));
    },

    limiterDelete({ namespace, limits }: LimiterDeleteCommand): Promise<number> {
      let keys: string[];
      try {
        keys = keysOf(namespace, limits);
      } catch (err) {
        return Promise.reject(err);
      }
      if (keys.length === 0) return Promise.resolve(0);
      const values = [[...keys]];
      return afterTakes(async () =>
        Number((await ctx.query('limiterDelete', 'write', { ...del, values }))[0]?.n),
      );
    },

    limiterAdjust: postgresLimiterAdjust(ctx, keysOf, afterTakes),

    limiterReset(namespace: string): Promise<number> {
      try {
        checkText(namespace, 'namespace', Number.POSITIVE_INFINITY);
      } catch (err) {
        return Promise.reject(err);
      }
      // `{<tag>:...` and `{<tag>}...` (src/redis/limiter-keys.ts): each the range [p, p with its
      // last character + 1) of the bytewise-ordered key (`:` + 1 is `;`, `}` + 1 is `~`).
      const open = `{${namespaceTag(namespace)}`;
      const values = [`${open}:`, `${open};`, `${open}}`, `${open}~`];
      return afterTakes(async () =>
        Number((await ctx.query('limiterReset', 'write', { ...reset, values }))[0]?.n),
      );
    },
  };
}

/** Deletes at most `limit` limiter rows past their sweep time (equivalent to no state). */
export function limiterCleanup(ctx: PgContext): PgCleanup {
  const s = ctx.schema;
  const cleanup = {
    name: statementName(s, 'limiter-cleanup'),
    text: `SELECT ${s}.limiter_cleanup($1::int) AS n`,
  };
  return async (limit) =>
    Number((await ctx.query('limiterCleanup', 'write', { ...cleanup, values: [limit] }))[0]?.n);
}

// A take's arguments for limiter_take, checked as the other stores check them (before any SQL:
// a malformed command charges nothing and never reaches the database). `values[7]`, the
// deadline, is filled in when the take is sent.
function takeValues({ namespace, limits, cost, now }: LimiterTakeCommand): unknown[] {
  const at = now === undefined ? null : limiterTime(now, 'now');
  limiterCost(cost);
  const keys = keysOf(namespace, limits);
  const n = limits.length;
  const codes: string[] = new Array(n);
  const lims: number[] = new Array(n);
  const windows: number[] = new Array(n);
  const params: number[] = new Array(n);
  const blocks: number[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const spec = (limits[i] as LimitCall).spec;
    if (!checkedSpecs.has(spec)) {
      checkSpec(spec, `limits[${i}].spec`);
      checkedSpecs.add(spec);
    }
    codes[i] = ALGORITHM_CODE[spec.algorithm];
    lims[i] = spec.limit;
    windows[i] = spec.windowMs;
    params[i] = spec.param;
    blocks[i] = spec.blockMs ?? 0;
  }
  // Every written row is kept past its expiry by the stores' slack (src/windows/limits/time.ts): longer
  // on a caller's time, whose clock and the database's may differ.
  const slack = at === null ? STATE_SLACK_MS : CLIENT_STATE_SLACK_MS;
  return [keys, codes, lims, windows, params, cost, at, null, slack, blocks];
}

// The rows of a command's limits, checked (before any SQL): a subject or `by` PostgreSQL text can
// hold as it is, a key within MAX_KEY_BYTES, and one row per limit: two limits of one take on one
// row would each decide on the same state and the second charge would overwrite the first (the
// limiter never builds such a take).
export function keysOf(namespace: unknown, limits: readonly LimitCall[]): string[] {
  checkText(namespace, 'namespace', Number.POSITIVE_INFINITY);
  if (!Array.isArray(limits)) throw new InvalidArgumentError('limits', 'an array of limit calls', limits);
  const tag = namespaceTag(namespace as string);
  const keys: string[] = new Array(limits.length);
  for (let i = 0; i < limits.length; i++) {
    const call = limits[i] as LimitCall;
    if (!isPlainObject(call)) throw new InvalidArgumentError(`limits[${i}]`, 'a limit call', call);
    checkText(call.subject, `limits[${i}].subject`, MAX_KEY_BYTES);
    if (call.by !== undefined) checkText(call.by, `limits[${i}].by`, MAX_KEY_BYTES);
    if (!isPlainObject(call.spec) || typeof call.spec.id !== 'string') {
      throw new InvalidArgumentError(`limits[${i}].spec`, 'a limit spec object', call.spec);
    }
    const key = checkText(limiterKey(tag, call), `limits[${i}].subject`, MAX_KEY_BYTES);
    for (let j = 0; j < i; j++) {
      if (keys[j] === key) {
        throw new InvalidArgumentError(
          `limits[${i}]`,
          `a limit whose subject, id and shape no other limit of the take has (limits[${j}])`,
          key,
        );
      }
    }
    keys[i] = key;
  }
  return keys;
}

// A string PostgreSQL `text` can hold as it is: no U+0000, no lone surrogate (sent as U+FFFD,
// two different keys would be one row), at most `maxBytes` UTF-8 bytes.
function checkText(value: unknown, path: string, maxBytes: number): string {
  if (typeof value !== 'string') throw new InvalidArgumentError(path, 'a string', value);
  if (value.includes('\u0000')) {
    throw new InvalidArgumentError(
      path,
      'a string without U+0000 (PostgreSQL text cannot hold U+0000)',
      value,
    );
  }
  if (!isWellFormed(value))
    throw new InvalidArgumentError(path, 'a well-formed string (no lone surrogate)', value);
  if (value.length > maxBytes / 3 && Buffer.byteLength(value, 'utf8') > maxBytes) {
    throw new InvalidArgumentError(path, `at most ${maxBytes} UTF-8 bytes`, value);
  }
  return value;
}

/** Rejects with `err` once `fence` (performance.now()) has passed, or at once when the server answered. */
function holdUntil(fence: number, err: unknown): Promise<never> {
  const cause = err instanceof StoreError ? err.cause : err;
  const wait = fence - performance.now();
  if (wait <= 0 || sqlState(cause) !== undefined) return Promise.reject(err);
  // +1: a timer may fire up to 1 ms early (see FENCE_MARGIN_MS).
  return new Promise((_, reject) => setTimeout(() => reject(err), Math.ceil(wait) + 1));
}
