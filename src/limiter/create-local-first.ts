// createLocalFirstLimiter: the options of local-first limits, validated, and the limiter built on
// a plain one (local-first.ts holds the decisions and the bound's derivation).
import type { Duration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, positiveInt } from '../core/validate.js';
import { type LimiterOptions, limiterConfig, pinLimiterShapes } from './limiter.js';
import { LocalFirstLimiter } from './local-first.js';
import { RateLimiter } from './rate-limiter.js';

/** The `localFirst` options of {@link createLocalFirstLimiter}. */
export interface LocalFirstOptions {
  /**
   * How many processes lease this limiter's keys at once (a positive integer, at most 10,000). It
   * sets the bound: across them, at most `limit + nodes x share` is admitted in any window.
   */
  nodes: number;
  /**
   * Points of one share (a positive integer, at most the smallest limit). Default
   * `floor(limit / (10 x nodes))`, at least 1: the slack `nodes x share` is then at most a tenth
   * of the limit where `limit >= 10 x nodes` (else `nodes` points), and a hot key costs one store
   * call per `share` takes on each node.
   */
  share?: number;
  /**
   * How long a node decides from one share before it gives back the rest and leases again, from
   * 1 ms to the shortest window. Default: a quarter of the shortest window, at most 1 s. Shorter:
   * the nodes' views meet sooner (less deviation); longer: fewer store calls for keys used in
   * bursts.
   */
  lease?: Duration;
  /**
   * Takes of a key within one lease period on this node before it leases a share (a positive
   * integer). Default 4: a key taken less often than that is cold, and its takes go to the store
   * one by one (a share leased for it would mostly expire unused).
   */
  hotAfter?: number;
  /**
   * Keys this node tracks (hot, or counted while cold): at least this many, at most twice.
   * Default 10,000 (~300 bytes each: 3 to 6 MB). The least recently used go first; a key
   * dropped while it holds a share loses its rest (it counts as spent until it leaves the
   * window: never counted twice).
   */
  maxKeys?: number;
}

/** Options of {@link createLocalFirstLimiter}: a limiter's options and `localFirst`. */
export interface LocalFirstLimiterOptions extends LimiterOptions {
  localFirst: LocalFirstOptions;
}

const LOCAL_FIRST_OPTIONS = keysOf<LocalFirstOptions>({
  nodes: true,
  share: true,
  lease: true,
  hotAfter: true,
  maxKeys: true,
});
// A share of the default size is a tenth of the limit over all nodes (see `share`).
const DEFAULT_SLACK_FRACTION = 10;
// A lease of a quarter window lets a node's view meet the store's four times per window; 1 s
// caps it for long windows, where a view a second old is already one most readers accept.
const DEFAULT_LEASE_FRACTION = 4;
const MAX_DEFAULT_LEASE_MS = 1000;
const DEFAULT_HOT_AFTER = 4;
// 10,000 to 20,000 keys x ~300 bytes (the entry, its arrays, the key and its calls): 3 to 6 MB
// per limiter, where a busy node's hot keys are counted in hundreds.
const DEFAULT_MAX_KEYS = 10_000;
// More processes than this leasing one key is a fleet for which shares of one point would still
// overshoot by thousands: such a key belongs on the store one take at a time.
const MAX_NODES = 10_000;

/**
 * Creates a limiter that decides hot keys locally (DESIGN §3.12, docs/limits.md *Local-first
 * limits*): a node leases a share of a key's budget from the store in one take and admits from it
 * without a store call until it runs out or its lease ends, then gives back the unused rest and
 * leases again; cold keys, refusals and costs above a share go to the store one take at a time.
 * Across `nodes` processes at most `limit + nodes x share` (`limiter.slack` above the limit) is
 * admitted in any window; refusals always come from the store, and charge nothing.
 *
 * `sliding-log`, `sliding-window` and `fixed-window` limits counting by the plain key; not `gcra`
 * (a share charged at once is a burst its smooth rate spreads over time), `by` subjects or
 * `blockDuration` (a share the store refuses would block the key).
 *
 * @example
 * ```ts
 * const limiter = createLocalFirstLimiter({
 *   algorithm: 'sliding-log', limit: 1000, window: '1s',
 *   // 4 processes, shares of 25: at most 1000 + 4 x 25 = 1100 in any second, one store call per 25 takes.
 *   localFirst: { nodes: 4, share: 25 },
 * });
 * for (let i = 0; i < 10; i++) await limiter.take('hot-key');
 * limiter.slack; // 100
 * await limiter.release(); // on shutdown: give back what this node still holds
 * ```
 */
export function createLocalFirstLimiter(input: LocalFirstLimiterOptions): LocalFirstLimiter {
  if (!isPlainObject(input)) throw new InvalidOptionError('options', 'an object', input);
  const { localFirst, ...rest } = input;
  // The limiter's own options first: a misspelt `localFirst` is named as such.
  const config = limiterConfig(rest, {}, ['localFirst']);
  if (!isPlainObject(localFirst)) {
    throw new InvalidOptionError('localFirst', 'an object like { nodes: 4 }', localFirst);
  }
  knownKeys('localFirst', localFirst, LOCAL_FIRST_OPTIONS);
  const specs = config.specs;
  for (const [i, spec] of specs.entries()) {
    const at = input.limits !== undefined ? `limits[${i}].` : '';
    if (spec.algorithm === 'gcra') {
      throw new InvalidOptionError(
        `${at}algorithm`,
        "'sliding-log', 'sliding-window' or 'fixed-window' with localFirst (a share is a burst GCRA's rate would spread)",
        spec.algorithm,
      );
    }
    if (spec.by !== undefined) {
      throw new InvalidOptionError(`${at}by`, 'absent with localFirst (shares are per plain key)', spec.by);
    }
    if ((spec.blockMs ?? 0) > 0) {
      throw new InvalidOptionError(
        `${at}blockDuration`,
        'absent with localFirst (a share the store refuses would block the key)',
        spec.blockMs,
      );
    }
  }
  if (typeof config.store.limiterAdjust !== 'function') {
    throw new InvalidOptionError(
      'store',
      'a store with limiterAdjust (memoryStore(), the Redis and PostgreSQL stores): unused shares are given back with it',
      config.store,
    );
  }
  const nodes = positiveInt('localFirst.nodes', localFirst.nodes);
  if (nodes > MAX_NODES) throw new InvalidOptionError('localFirst.nodes', `at most ${MAX_NODES}`, nodes);
  const smallest = Math.min(...specs.map((s) => s.limit));
  const share =
    localFirst.share === undefined
      ? Math.max(1, Math.floor(smallest / (DEFAULT_SLACK_FRACTION * nodes)))
      : positiveInt('localFirst.share', localFirst.share);
  if (share > smallest) {
    throw new InvalidOptionError('localFirst.share', `at most the smallest limit (${smallest})`, share);
  }
  const shortest = Math.min(...specs.map((s) => s.windowMs));
  const leaseMs =
    localFirst.lease === undefined
      ? Math.max(1, Math.min(MAX_DEFAULT_LEASE_MS, Math.floor(shortest / DEFAULT_LEASE_FRACTION)))
      : timerDuration('localFirst.lease', localFirst.lease);
  if (leaseMs < 1 || leaseMs > shortest) {
    // Longer than a window, a refused share would keep a key's takes exact for more than a
    // window after the room came back, and a share never admits past its window anyway.
    throw new InvalidOptionError(
      'localFirst.lease',
      `from 1 ms to the shortest window (${shortest} ms)`,
      localFirst.lease,
    );
  }
  if (input.clock === 'client') {
    // A share's rest is given back by the store's time against the share's window; per-process
    // wall clocks drift apart, and a rest given back at a time behind another node's charge would
    // re-date that charge (see LimiterAdjustCommand.notAfter).
    throw new InvalidOptionError(
      'clock',
      "'store' (default) or one Clock shared by every node, with localFirst (not 'client': each process's own clock)",
      input.clock,
    );
  }
  const hotAfter = positiveInt('localFirst.hotAfter', localFirst.hotAfter ?? DEFAULT_HOT_AFTER);
  const maxKeys = positiveInt('localFirst.maxKeys', localFirst.maxKeys ?? DEFAULT_MAX_KEYS);
  pinLimiterShapes();
  return new LocalFirstLimiter(new RateLimiter(config), {
    store: config.store,
    namespace: config.namespace,
    specs,
    passIn: config.passIn,
    local: config.local,
    timeoutMs: config.timeoutMs,
    name: config.name,
    emit: config.emit,
    share,
    nodes,
    leaseMs,
    hotAfter,
    maxKeys,
  });
}
