// Durability of a Redis write across a failover: Redis replicates asynchronously, so a write a
// master answered and then lost with its replicas behind is gone once a replica is promoted. With
// `durability`, each script call that writes is followed, on the same connection, by WAIT (or
// WAITAOF) and answered only once enough replicas confirmed it (docs/redis.md, *Failover and
// durability*).
import type { Duration } from '../core/duration.js';
import { ErrorCode, InvalidOptionError, OnceflowError } from '../core/errors.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, knownKeys, nonNegativeInt } from '../core/validate.js';
import { NotSentError, pipelineOf } from './bounded-client.js';
import { clientKeyPrefix } from './client-options.js';
import { evalScript, type RedisLike } from './eval.js';
import type { LuaScript } from './scripts.generated.js';

/**
 * The `durability` option of `createRedisStore` and `createStreamProducer`: how many replicas
 * must confirm a write before it is answered.
 */
export interface DurabilityOptions {
  /**
   * Replicas of the key's master that must have the write (WAIT) before the call answers. 0 is
   * allowed with `aof: true` only (the master's own AOF fsync, nothing replicated).
   */
  replicas: number;
  /**
   * How long to wait for them (`'100ms'`, `'1s'`, or ms; at least 1 ms). The connection waits with
   * the call: commands sent after it on the same client wait too. A store's script call and its
   * wait are one pipeline, bounded by the store's own `timeout` plus this one.
   */
  timeout: Duration;
  /**
   * Also wait until the write is fsynced to the AOF of the master and of `replicas` replicas
   * (WAITAOF, Redis >= 7.2, `appendonly yes` on the master). On an older server the wait falls
   * back to WAIT alone (replicas' memory, not their disks); `shortfall.aof` says which ran.
   * Before its first write the store asks the master (a WAITAOF of nothing): one with
   * `appendonly no` refuses it, and every call is then refused before its script runs, ERR_STORE
   * `outcome: 'not-applied'`, `retriable: false`, `cause` an ERR_INVALID_OPTION naming
   * `durability.aof` (asked again on each call until the master accepts). Default false.
   */
  aof?: boolean;
  /**
   * When fewer replicas confirmed than wanted within `timeout` (the write is on the master, a
   * failover may lose it): `'throw'` (default) rejects the call with ERR_STORE (`outcome:
   * 'unknown'`, `retriable: true`, `cause` an ERR_NOT_REPLICATED {@link NotReplicatedError}):
   * retry the same call, which is answered as it was (`duplicate`, the same entry id, `replayed`)
   * once replicated, or applied again if the failover lost it. A function instead is called with
   * the shortfall and the call answers as usual (availability first: log it, count it).
   *
   * A wait that fails after its script ran (an error reply to WAIT, such as BUSY) is a shortfall
   * with `replicas: 0`, the wait's error the NotReplicatedError's `cause`: the write stands on the
   * master. An idempotency `begin` whose wait falls short (`'throw'`) releases the lease it took
   * (best effort; the body has not run) before it rejects, so the retry can take it at once
   * instead of answering `in-progress` until the lease runs out.
   */
  onShort?: 'throw' | ((shortfall: ReplicationShortfall) => void);
}

/** What a wait that fell short found: see {@link DurabilityOptions.onShort}. */
export interface ReplicationShortfall {
  /** The store operation (`ledgerApply`, `ledgerResolve`, `idempotency`, `publish`). */
  readonly operation: string;
  /** Calls answered by the script call the wait followed (a batch answers many at once). */
  readonly calls: number;
  /** Replicas wanted (`durability.replicas`). */
  readonly wanted: number;
  /** Replicas that confirmed within the timeout. */
  readonly replicas: number;
  /** WAITAOF ran (else WAIT): `replicas` then counts fsyncs, and `local` is the master's. */
  readonly aof: boolean;
  /** With `aof`: whether the master fsynced its own AOF in time. */
  readonly local: boolean | undefined;
  readonly timeoutMs: number;
}

/**
 * A write was answered by its master but fewer replicas than wanted confirmed it in time: the
 * `cause` of the ERR_STORE a durable call rejects with (`durability.onShort: 'throw'`).
 *
 * @example
 * ```ts
 * import { NotReplicatedError } from 'onceflow/redis';
 * const err = new NotReplicatedError({
 *   operation: 'ledgerApply', calls: 3, wanted: 1, replicas: 0, aof: false, local: undefined, timeoutMs: 100,
 * });
 * err.code; // 'ERR_NOT_REPLICATED'
 * err.shortfall.replicas; // 0
 * ```
 */
export class NotReplicatedError extends OnceflowError {
  readonly shortfall: ReplicationShortfall;
  constructor(shortfall: ReplicationShortfall, cause?: unknown) {
    const { operation, calls, wanted, replicas, aof, local, timeoutMs } = shortfall;
    const what = aof
      ? `fsynced by ${replicas} of ${wanted} replicas${local === false ? ' and not by the master' : ''} (WAITAOF)`
      : `confirmed by ${replicas} of ${wanted} replicas (WAIT)`;
    super(
      ErrorCode.NOT_REPLICATED,
      `\`${operation}\` (${calls} call${calls === 1 ? '' : 's'}) was applied by the master but ${
        cause === undefined
          ? `${what} within ${timeoutMs} ms`
          : `its wait failed (${(cause as Error)?.message ?? String(cause)})`
      }: a failover may lose it; retry the same call`,
      { cause },
    );
    this.shortfall = shortfall;
  }
}

/** A validated `durability` option; `waitaof` is learnt from the first WAITAOF the server refuses. */
export interface Durability {
  readonly replicas: number;
  readonly timeoutMs: number;
  readonly aof: boolean;
  readonly onShort: 'throw' | ((shortfall: ReplicationShortfall) => void);
  /** Whether WAITAOF is known to work (true), be missing (false), or untried (undefined). */
  waitaof: boolean | undefined;
}

/**
 * Reads the `durability` option of `where` (`createRedisStore`, `createStreamProducer`): undefined
 * when absent, else validated, and the client checked for `pipeline()`.
 */
export function durabilityOption(value: unknown, client: RedisLike): Durability | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value))
    throw new InvalidOptionError('durability', "an object like { replicas: 1, timeout: '100ms' }", value);
  knownKeys('durability', value, ['replicas', 'timeout', 'aof', 'onShort']);
  const aof = value['aof'] ?? false;
  if (typeof aof !== 'boolean') throw new InvalidOptionError('durability.aof', 'a boolean', aof);
  const replicas = nonNegativeInt('durability.replicas', value['replicas']);
  if (replicas === 0 && !aof)
    throw new InvalidOptionError(
      'durability.replicas',
      'at least 1 (0 waits for nothing unless `aof: true` waits for the master to fsync)',
      replicas,
    );
  if (value['timeout'] === undefined)
    throw new InvalidOptionError(
      'durability.timeout',
      "a duration such as '100ms' (how long to wait)",
      undefined,
    );
  const timeoutMs = timerDuration('durability.timeout', value['timeout'] as Duration);
  // WAIT's 0 means "forever": a replica that never comes back would hold the call for good.
  if (timeoutMs === 0)
    throw new InvalidOptionError(
      'durability.timeout',
      'at least 1 ms (0 would wait forever)',
      value['timeout'],
    );
  const onShort = value['onShort'] ?? 'throw';
  if (onShort !== 'throw' && typeof onShort !== 'function')
    throw new InvalidOptionError('durability.onShort', "'throw' or a function (shortfall) => void", onShort);
  if (typeof (client as { pipeline?: unknown }).pipeline !== 'function')
    throw new InvalidOptionError(
      'client',
      'an ioredis Redis or Cluster client (with pipeline(): `durability` sends WAIT with each write)',
      client,
    );
  return { replicas, timeoutMs, aof, onShort: onShort as Durability['onShort'], waitaof: undefined };
}

// How long a wait's marker key lives if the DEL right after it in the pipeline never runs (the
// connection lost between them): it then expires by itself. Any value would do, as nothing reads
// it; a minute leaves nothing behind for long.
const MARKER_TTL_MS = 60_000;

/**
 * A key in `key`'s hash slot for the marker write: its hash tag kept (so a Cluster sends it to the
 * node that ran the script, in the same pipeline), or the whole key made the tag. `keyPrefix`: the
 * client's own, which it prepends to both keys: a whole key made the tag includes it.
 */
export function markerKey(key: string, keyPrefix = ''): string {
  const open = key.indexOf('{');
  const close = open === -1 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? `${key.slice(0, close + 1)}:onceflow-wait` : `{${keyPrefix}${key}}:onceflow-wait`;
}

/**
 * Runs `script` as {@link evalScript} does, then, with `durability`, waits for its replicas: in
 * one pipeline on the node that runs it, the script, a marker write (SET then DEL of a key in its
 * slot) and WAIT (or WAITAOF). The marker makes the wait cover everything that master had written
 * when it answered, whatever the script wrote (nothing, when it answered a repeat from what an
 * earlier call wrote, perhaps on another connection): WAIT counts replicas that reached the
 * connection's last write, and a master replicates in one ordered stream. A shortfall is reported
 * (`onShort` a function) or handed back as `short` for the caller to throw once it has done what
 * an answered script call needs (`onShort: 'throw'`); `calls` is how many calls the script answers.
 */
export async function evalWaited(
  client: RedisLike,
  durability: Durability | undefined,
  operation: string,
  calls: number,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<{ reply: unknown; short: NotReplicatedError | undefined }> {
  if (durability === undefined)
    return { reply: await evalScript(client, script, keys, args), short: undefined };
  const marker = markerKey(keys[0] as string, clientKeyPrefix(client));
  if (durability.aof && durability.waitaof === undefined) await probeWaitaof(client, durability, marker);
  const run = (command: 'EVALSHA' | 'EVAL', body: string) =>
    pipelined(client, durability, marker, [command, body, keys.length, ...keys, ...args]);
  let [scriptResult, waited] = await run('EVALSHA', script.sha1);
  let error = scriptResult?.[0];
  if (error?.message.startsWith('NOSCRIPT')) {
    // EVAL also caches the script, so the next call's EVALSHA succeeds again.
    [scriptResult, waited] = await run('EVAL', script.text);
    error = scriptResult?.[0];
  }
  let reply: unknown;
  if (error && /^(MOVED|ASK) /.test(error.message)) {
    // A Cluster's slot moved: nothing ran there. The client follows the redirection for a plain
    // call; the wait then goes to the slot's node in a pipeline of its own.
    reply = await evalScript(client, script, keys, args);
    [, waited] = await pipelined(client, durability, marker, undefined);
  } else if (error) {
    throw error;
  } else {
    reply = scriptResult?.[1];
  }
  return { reply, short: shortfall(durability, operation, calls, waited) };
}

/** {@link evalWaited}, with its parameters, throwing its shortfall (`onShort: 'throw'`) at once. */
export async function evalDurable(...call: Parameters<typeof evalWaited>): Promise<unknown> {
  const { reply, short } = await evalWaited(...call);
  if (short) throw short;
  return reply;
}

/** The replicas (and local fsync) a wait found, as WAIT or WAITAOF answered. */
interface Waited {
  readonly aof: boolean;
  readonly replicas: number;
  readonly local: boolean | undefined;
  /** The wait's own failure, after its script ran: a shortfall of unknown extent. */
  readonly error?: Error;
}

// WAITAOF's refusal on a master with `appendonly no` (it checks that before waiting).
const AOF_DISABLED = /appendonly is disabled/i;

/**
 * Before the first script of an `aof: true` store: whether the script's master can WAITAOF, asked
 * with a WAITAOF of nothing (a 1 ms wait for the master's own fsync of this connection's last
 * write) pipelined behind a read of the marker key (which routes it to the script's node in a
 * Cluster). Without it, a master with `appendonly no` would book every write and then refuse its
 * wait: each call an `unknown` failure that retrying cannot mend. Nothing is sent after it when
 * it fails, so every failure here says the script was not sent.
 */
async function probeWaitaof(client: RedisLike, durability: Durability, marker: string): Promise<void> {
  let results: [Error | null, unknown][] | null;
  try {
    results = await pipelineOf(client, 0).call('EXISTS', marker).call('WAITAOF', 1, 0, 1).exec();
  } catch (err) {
    if (err instanceof NotSentError) throw err;
    throw new NotSentError(
      `asking the master whether it can WAITAOF (durability.aof) failed: ${(err as Error)?.message ?? String(err)}; the script was not sent`,
      true,
    );
  }
  const error = results?.[1]?.[0];
  if (!error) {
    durability.waitaof = true;
    return;
  }
  if (/unknown command/i.test(error.message)) {
    // Redis before 7.2: WAIT alone from now on (documented).
    durability.waitaof = false;
    return;
  }
  if (AOF_DISABLED.test(error.message))
    throw new InvalidOptionError(
      'durability.aof',
      `false for a master with \`appendonly no\` (it refused WAITAOF: "${error.message}"; set \`appendonly yes\` on every master, or leave \`aof\` out); the script was not sent`,
      true,
    );
  // Another refusal (LOADING, BUSY, a replica's): asked again by the next call, which may pass;
  // a user denied WAITAOF (NOPERM) is denied it again.
  throw new NotSentError(
    `asking the master whether it can WAITAOF (durability.aof) was refused: ${error.message}; the script was not sent`,
    !/^NOPERM\b/.test(error.message),
  );
}

// One pipeline: `command` (a script call, or nothing), the marker write, the wait. Learns from
// the server's refusal that it has no WAITAOF, and waits with WAIT on the same connection then.
async function pipelined(
  client: RedisLike,
  durability: Durability,
  marker: string,
  command: (string | number)[] | undefined,
): Promise<[[Error | null, unknown] | undefined, Waited]> {
  const aof = durability.aof && durability.waitaof !== false;
  // On the store's bounded client: held while it is not connected, and its reply waited for at
  // most the store's `timeout` plus the wait's own.
  const pipe = pipelineOf(client, durability.timeoutMs);
  if (command !== undefined) pipe.call(...(command as [string, ...(string | number)[]]));
  pipe.call('SET', marker, '1', 'PX', MARKER_TTL_MS).call('DEL', marker);
  if (aof) pipe.call('WAITAOF', 1, durability.replicas, durability.timeoutMs);
  else pipe.call('WAIT', durability.replicas, durability.timeoutMs);
  const results = (await pipe.exec()) ?? [];
  const scriptResult = command === undefined ? undefined : results[0];
  const [waitError, waitReply] = results[results.length - 1] ?? [
    new Error('no reply to the wait'),
    undefined,
  ];
  if (waitError) {
    if (aof && /unknown command/i.test(waitError.message)) {
      // Redis before 7.2: WAIT alone from now on (documented). Its marker is written again, so
      // this wait covers the script too.
      durability.waitaof = false;
      const [, waited] = await pipelined(client, durability, marker, undefined);
      return [scriptResult, waited];
    }
    // The script's own failure (a redirection, NOSCRIPT) fails the marker and the wait too: the
    // caller handles it.
    if (scriptResult?.[0]) return [scriptResult, { aof, replicas: 0, local: undefined }];
    // No answer to the script at all: whether it ran is unknown.
    if (command !== undefined && scriptResult === undefined) throw waitError;
    // The script ran (or ran before, for a wait alone): its write stands on the master, and only
    // the wait failed. A shortfall then (retry the same call), never the wait's own error reply,
    // which might read as "nothing ran" (BUSY, LOADING).
    // A master that refuses WAITAOF for want of an AOF is asked again before the next script.
    if (aof && AOF_DISABLED.test(waitError.message)) durability.waitaof = undefined;
    return [scriptResult, { aof, replicas: 0, local: aof ? false : undefined, error: waitError }];
  }
  if (aof) {
    durability.waitaof = true;
    const [local, replicas] = waitReply as [number, number];
    return [scriptResult, { aof, replicas: Number(replicas), local: Number(local) >= 1 }];
  }
  return [scriptResult, { aof, replicas: Number(waitReply), local: undefined }];
}

// The error to throw when the wait fell short and `onShort` is 'throw'; a function is called instead.
function shortfall(
  durability: Durability,
  operation: string,
  calls: number,
  waited: Waited,
): NotReplicatedError | undefined {
  if (waited.error === undefined && waited.replicas >= durability.replicas && waited.local !== false)
    return undefined;
  const found: ReplicationShortfall = {
    operation,
    calls,
    wanted: durability.replicas,
    replicas: waited.replicas,
    aof: waited.aof,
    local: waited.local,
    timeoutMs: durability.timeoutMs,
  };
  if (durability.onShort === 'throw') return new NotReplicatedError(found, waited.error);
  try {
    durability.onShort(found);
  } catch {
    // A throwing report must not turn an answered call into a failure (it was applied).
  }
  return undefined;
}
