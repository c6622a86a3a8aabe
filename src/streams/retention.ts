import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, knownKeys, nonEmptyString, nonNegativeInt } from '../core/validate.js';
import { boundedClient } from '../redis/bounded-client.js';
import { evalScript, type RedisLike } from '../redis/eval.js';
import { storeTimeout } from '../redis/redis-store.js';
import { scripts } from '../redis/scripts.generated.js';
import { isClosedClient, redisStoreError } from '../redis/store-error.js';
import { featuresOf, forgetStreamFeatures } from './redis-features.js';

/** Options of {@link trimStream}. */
export interface TrimStreamOptions {
  client: RedisLike;
  stream: string;
  /** Entries older than this (by their id's time, against the server's clock) may be trimmed. */
  maxAge: Duration;
  /**
   * Groups that must exist before anything is trimmed: a group whose consumer has not started yet
   * has no position on the stream, and would find its first entries gone. Default: none.
   */
  groups?: readonly string[];
  /**
   * `true`: `MINID ~`, whole macro nodes only (cheaper on a long stream; it trims less than asked,
   * never more). Default `false`: exactly to the bound.
   */
  approximate?: boolean;
  /** With `approximate`: at most this many entries evicted by one call. Default: no limit. */
  limit?: number;
  /**
   * `'auto'` (default): `XTRIM ... ACKED` when the server has it (Redis 8.2), else the script that
   * finds the groups' floor (Redis 7.0). `'floor'` or `'acked'` force one.
   */
  mode?: 'auto' | 'floor' | 'acked';
  /**
   * How long each command may wait: for the client to be connected (held meanwhile, never queued
   * in the client), then for its reply. Past it the trim rejects with `ERR_STORE`: `outcome:
   * 'not-applied'` when nothing was sent, `'unknown'` when the trim was sent (it may have run;
   * trimming again is harmless). Default `'10s'`, as `createRedisStore`'s.
   */
  timeout?: Duration;
}

/** What {@link trimStream} did. */
export interface TrimResult {
  /** Entries removed. */
  readonly trimmed: number;
  /** The MINID given to XTRIM, `undefined` when it did not run. */
  readonly minId: string | undefined;
  /**
   * What bounded the trim: `'age'` the cutoff by age; `'pending'` a group's oldest pending entry;
   * `'undelivered'` a group's last-delivered-id (the entries after it are not read yet); `'acked'`
   * the server's ACKED rule; `'missing-group'` an expected group does not exist (nothing trimmed);
   * `'no-stream'`; `'young'` (the server's clock is not yet `maxAge` past the epoch).
   */
  readonly bound: 'age' | 'pending' | 'undelivered' | 'acked' | 'missing-group' | 'no-stream' | 'young';
  /** The group that held the trim back (`bound` `'pending'`, `'undelivered'`, `'missing-group'`). */
  readonly group: string | undefined;
  /** How the bound was found: the floor script (7.0) or the server's ACKED option (8.2). */
  readonly mode: 'floor' | 'acked';
}

// Every key of TrimStreamOptions: any other is a typo, refused by name (knownKeys).
const TRIM_OPTIONS = [
  'client',
  'stream',
  'maxAge',
  'groups',
  'approximate',
  'limit',
  'mode',
  'timeout',
] as const;

function checkObject(options: unknown): void {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
}

const BOUNDS = new Set(['age', 'pending', 'undelivered', 'acked', 'missing-group', 'no-stream', 'young']);

/**
 * Trims `stream` by age (`XTRIM MINID`), never past an entry a consumer group still needs: on
 * Redis 7.0 one script reads every group's oldest pending entry and last-delivered-id and trims to
 * the lowest of those and the cutoff, atomically; on Redis 8.2 and later the same script uses
 * `XTRIM ... ACKED`, where the server itself keeps every entry some group has not read and
 * acknowledged. A plain reader (`XRANGE`, no group) is not known to the server: check it with
 * {@link checkReaderPosition}.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { trimStream } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const stream = `example:${process.pid}:settlements`;
 * // Ids carry their time: these three were added 1 s after the epoch, long past any maxAge.
 * for (const seq of [1, 2, 3]) await redis.xadd(stream, `1000-${seq}`, 'e', String(seq));
 * await redis.xgroup('CREATE', stream, 'billing', '0');
 * await redis.xreadgroup('GROUP', 'billing', 'c1', 'COUNT', 2, 'STREAMS', stream, '>');
 * await redis.xack(stream, 'billing', '1000-1');
 * // 1000-2 is pending in 'billing' and 1000-3 not delivered yet: they stay, however old.
 * const r = await trimStream({ client: redis, stream, maxAge: '1h' });
 * r.trimmed; // 1
 * await redis.xlen(stream); // 2
 * // r.bound: 'pending' (r.group 'billing') on Redis 7.0; 'acked' where XTRIM has ACKED (8.2)
 * await redis.del(stream);
 * redis.disconnect();
 * ```
 */
export async function trimStream(options: TrimStreamOptions): Promise<TrimResult> {
  checkObject(options);
  knownKeys('', options, TRIM_OPTIONS);
  const { client } = options;
  if (typeof (client as RedisLike | undefined)?.call !== 'function') {
    throw new InvalidOptionError('client', 'an ioredis Redis or Cluster client (with call())', client);
  }
  // Every command through it: sent only while the client is connected, its wait bounded.
  const redis = boundedClient(client, storeTimeout(options.timeout));
  const stream = nonEmptyString('stream', options.stream);
  const maxAge = parseDuration(options.maxAge, 'maxAge');
  const groups = (options.groups ?? []).map((g, i) => nonEmptyString(`groups[${i}]`, g));
  const approximate = options.approximate ?? false;
  if (typeof approximate !== 'boolean') throw new InvalidOptionError('approximate', 'a boolean', approximate);
  const limit = options.limit === undefined ? 0 : nonNegativeInt('limit', options.limit);
  if (limit > 0 && !approximate) {
    throw new InvalidOptionError(
      'limit',
      'used with `approximate: true` (XTRIM takes LIMIT with ~ only)',
      limit,
    );
  }
  const asked = options.mode ?? 'auto';
  if (asked !== 'auto' && asked !== 'floor' && asked !== 'acked') {
    throw new InvalidOptionError('mode', "'auto', 'floor' or 'acked'", asked);
  }
  let mode: 'floor' | 'acked' = asked === 'auto' ? 'floor' : asked;
  if (asked === 'auto') {
    const closed = isClosedClient(client);
    try {
      mode = (await featuresOf(client, redis)).trimAcked ? 'acked' : 'floor';
    } catch (err) {
      throw redisStoreError('trimStream', err, closed, 'read');
    }
  }
  try {
    return await run(client, redis, stream, maxAge, mode, approximate, limit, groups);
  } catch (err) {
    // The features were read from another server than this one (a failover to an older version):
    // XTRIM refused ACKED before trimming anything. Detect again and trim the 7.0 way.
    if (asked === 'auto' && mode === 'acked' && isSyntaxError(err)) {
      forgetStreamFeatures(client);
      return run(client, redis, stream, maxAge, 'floor', approximate, limit, groups);
    }
    throw err;
  }
}

async function run(
  client: RedisLike,
  redis: RedisLike,
  stream: string,
  maxAge: number,
  mode: 'floor' | 'acked',
  approximate: boolean,
  limit: number,
  groups: readonly string[],
): Promise<TrimResult> {
  const args = [maxAge, mode, approximate ? '1' : '0', limit, ...groups];
  let reply: unknown;
  // Closed when the script is given to it: refused there, never sent.
  const closed = isClosedClient(client);
  try {
    reply = await evalScript(redis, scripts.streamTrim, [stream], args);
  } catch (err) {
    // 'script': the trim is the script's one write, so a failure before it changed nothing, but
    // a lost reply may hide a trim that ran (harmless to repeat: trimming is idempotent).
    throw redisStoreError('trimStream', err, closed, 'script');
  }
  const [trimmed, minId, bound, group] = reply as [number, string, string, string];
  if (!BOUNDS.has(bound)) throw new Error(`stream-trim answered an unknown bound ${String(bound)}`);
  return Object.freeze({
    trimmed: Number(trimmed),
    minId: minId === '' ? undefined : String(minId),
    bound: bound as TrimResult['bound'],
    group: group === '' ? undefined : String(group),
    mode,
  });
}

// The server's reply, under the StoreError that wraps it: XTRIM refused an option it does not know.
function isSyntaxError(err: unknown): boolean {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  return cause instanceof Error && cause.name === 'ReplyError' && /\bsyntax error\b/i.test(cause.message);
}

/** Options of {@link startRetention}: those of {@link trimStream}, and how often. */
export interface RetentionOptions extends TrimStreamOptions {
  /** Time between trims (the first one runs at once). */
  every: Duration;
  /** Stops the trimming (a trim in flight finishes). */
  signal?: AbortSignal;
  /** Called after each trim. */
  onTrim?: (result: TrimResult) => void;
  /** Called when a trim failed; the next one runs on schedule. Default: the error is dropped. */
  onError?: (err: unknown) => void;
}

/** A running retention: {@link startRetention}. */
export interface Retention {
  /** Stops the trimming; resolves when a trim in flight has finished. */
  stop(): Promise<void>;
}

/**
 * Trims `stream` by age every `every` (see {@link trimStream}), one trim at a time (a slow trim
 * delays the next, never overlaps it). A consumer or a producer runs one beside itself.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { startRetention } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const stream = `example:${process.pid}:retained`;
 * await redis.xadd(stream, '1000-1', 'e', '1');
 * const trims = [];
 * const retention = startRetention({ client: redis, stream, maxAge: '1h', every: '1m', onTrim: (r) => trims.push(r.trimmed) });
 * await retention.stop(); // the first trim runs at once; stop() waits for the one in flight
 * trims; // [1]
 * await redis.del(stream);
 * redis.disconnect();
 * ```
 */
export function startRetention(options: RetentionOptions): Retention {
  checkObject(options);
  knownKeys('', options, [...TRIM_OPTIONS, 'every', 'signal', 'onTrim', 'onError']);
  // What trimStream takes of them (it refuses the others).
  const trim: TrimStreamOptions = { client: options.client, stream: options.stream, maxAge: options.maxAge };
  for (const key of TRIM_OPTIONS) {
    if (options[key] !== undefined) (trim as unknown as Record<string, unknown>)[key] = options[key];
  }
  const every = timerDuration('every', options.every);
  if (every <= 0) throw new InvalidOptionError('every', 'a positive duration', options.every);
  // Validate once, here, rather than at the first tick where the error would go to onError.
  parseDuration(options.maxAge, 'maxAge');
  storeTimeout(options.timeout);
  nonEmptyString('stream', options.stream);
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  const stop = () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    return inFlight;
  };
  const tick = () => {
    timer = undefined;
    if (stopped) return;
    inFlight = trimStream(trim).then(
      (r) => options.onTrim?.(r),
      (err) => options.onError?.(err),
    );
    void inFlight.then(() => {
      if (!stopped) timer = setTimeout(tick, every);
    });
  };
  options.signal?.addEventListener('abort', () => void stop(), { once: true });
  if (options.signal?.aborted) stopped = true;
  tick();
  return { stop };
}
