import { performance } from 'node:perf_hooks';
import type { Duration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { timerDelay, timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys } from '../core/validate.js';
import { processStallMeter, type StallMeter } from './stall-meter.js';

/** Options of {@link createHeartbeat}. */
export interface HeartbeatOptions<Id = unknown> {
  /**
   * How often the node pings and sweeps. Default `'15s'`: under the 60 s idle timeout of the usual
   * proxies in front of a gateway (nginx `proxy_read_timeout`, AWS ALB), with room for one lost
   * ping. Bounds: 1 ms to 2^31 - 1 ms.
   */
  interval?: Duration;
  /**
   * Awake silence after which a connection is dead. Default `'45s'` = 3 intervals: two pings or
   * pongs may be lost or late (a phone's radio waking up) before a healthy client is judged.
   * Must exceed `interval`: a client that answers every ping is silent up to an interval plus a
   * round trip. Bounds: up to 2^31 - 1 ms.
   */
  timeout?: Duration;
  /** Monotonic clock in ms. Default `performance.now`. The wall clock is never read. */
  now?: () => number;
  /** The node's own event-loop stalls. Default the process's drift meter ({@link processStallMeter}). */
  stalls?: StallMeter;
  /**
   * Told each verdict that involved the node's own time: every drop (by the sweep, before it
   * returns), and every spared connection, one whose silence passed `timeout` on the monotonic
   * clock but not in awake time, proven alive by its next frame (told at that touch). `stalledMs`
   * is the node's stalls discounted from that silence. A throw is ignored (the verdict stands).
   */
  onVerdict?: (id: Id, verdict: HeartbeatVerdict, stalledMs: number) => void;
}

/**
 * `dropped`: awake silence past `timeout`. `spared`: a false timeout suppressed, a client that a
 * judge of the raw monotonic clock would have dropped, and that then spoke.
 */
export type HeartbeatVerdict = 'dropped' | 'spared';

const HEARTBEAT_OPTIONS = keysOf<HeartbeatOptions>({
  interval: true,
  timeout: true,
  now: true,
  stalls: true,
  onVerdict: true,
});

/** What the sweep timer of {@link Heartbeat.start} calls. */
export interface HeartbeatHandlers<Id> {
  /** Close a dead connection (it is already forgotten by the judge). */
  drop(id: Id): void;
  /** Ping a live connection; its pong (or any frame) is a {@link Heartbeat.touch}. */
  ping(id: Id): void;
}

/** A judge of liveness for a node's own connections. */
export interface Heartbeat<Id> {
  /**
   * Records inbound activity (any frame or pong), or a new connection. O(1), and so is telling a
   * `spared` verdict: it compares the connection's silence on both clocks, never visits another.
   */
  touch(id: Id): void;
  /** Forgets a connection (closed by either side). */
  remove(id: Id): boolean;
  /** Removes and returns the dead connections: O(dead + 1), the live ones are not visited. */
  sweep(): Id[];
  /** Awake ms since the connection's last activity, or `undefined` for an unknown one. */
  silentMs(id: Id): number | undefined;
  /** Connections judged. */
  readonly size: number;
  /** The live connections, oldest activity first (for pings). */
  ids(): IterableIterator<Id>;
  /**
   * Starts the one timer of all connections: every `interval`, sweep (drop the dead), then ping
   * the rest. Returns a stop function. The timer is `unref`ed.
   */
  start(handlers: HeartbeatHandlers<Id>): () => void;
}

/**
 * Judges liveness by the node's *awake* time: its monotonic clock minus its own event-loop stalls.
 * A node that was blocked for 2 s could read no socket for 2 s; that silence is not the client's.
 *
 * Each connection holds the awake and the monotonic time of its last activity, in a `Map` whose
 * insertion order is kept equal to that time's order (a touch deletes and re-inserts, and the
 * awake clock never goes back), so a sweep stops at the first live entry. The monotonic time is
 * what tells a spared connection (see {@link HeartbeatOptions.onVerdict}) at its next touch, in
 * O(1): counting the spared in the sweep would visit every live entry whose monotonic silence
 * passed `timeout` (all of them after a long stall), and count one again at each sweep.
 *
 * Bounds, with `S(a, b)` the node's stalls between monotonic instants a and b as the meter saw them:
 * - never before `timeout`: a connection is dropped only when its awake silence exceeds `timeout`,
 *   and awake time never runs faster than the monotonic clock;
 * - a silent client whose last activity was read at L is dropped by L + timeout + interval + S(L, drop)
 *   (its awake silence passes `timeout`, then the next sweep is due within `interval`, late by at
 *   most the stalls in between);
 * - a healthy client (awake gaps between its frames never over `timeout`) is never dropped, whatever
 *   the wall clock does (it is never read) and however long the node stalls. The drift meter counts
 *   each stall short by at most its resolution (50 ms by default), which the default timeout's two
 *   spare intervals absorb many times over.
 *
 * Example (internal until the gateway ships; its unit test runs this):
 * ```ts
 * let t = 0;
 * const hb = createHeartbeat<string>({ interval: '1s', timeout: '3s', now: () => t, stalls: { stalledMs: () => 0 } });
 * hb.touch('a');
 * t = 3000;
 * hb.sweep(); // [] (silent exactly `timeout`)
 * t = 3001;
 * hb.sweep(); // ['a']
 * ```
 */
export function createHeartbeat<Id>(options: HeartbeatOptions<Id> = {}): Heartbeat<Id> {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { interval, timeout }', options);
  knownKeys('', options, HEARTBEAT_OPTIONS);
  const interval = timerDuration('interval', options.interval ?? DEFAULT_INTERVAL);
  if (interval < 1) throw new InvalidOptionError('interval', 'a duration of at least 1 ms', options.interval);
  const timeout = timerDuration('timeout', options.timeout ?? DEFAULT_TIMEOUT);
  if (timeout <= interval) {
    throw new InvalidOptionError(
      'timeout',
      `a duration longer than \`interval\` (${interval} ms)`,
      options.timeout,
    );
  }
  const now = options.now ?? (() => performance.now());
  if (typeof now !== 'function')
    throw new InvalidOptionError('now', 'a function returning monotonic ms', now);
  const stalls = options.stalls ?? processStallMeter();
  if (typeof stalls !== 'object' || stalls === null || typeof stalls.stalledMs !== 'function') {
    throw new InvalidOptionError('stalls', 'a stall meter like { stalledMs(): number }', stalls);
  }
  const onVerdict = options.onVerdict;
  if (onVerdict !== undefined && typeof onVerdict !== 'function')
    throw new InvalidOptionError('onVerdict', 'a function (id, verdict, stalledMs)', onVerdict);
  const tell = (id: Id, verdict: HeartbeatVerdict, stalledMs: number) => {
    try {
      onVerdict?.(id, verdict, stalledMs);
    } catch {
      // A listener's bug must not keep a dead connection or skip the ones after it.
    }
  };

  // Awake time: monotonic minus stalled. Held non-decreasing whatever a meter reports, since the
  // sweep's early stop relies on the map being in awake-time order.
  // The clamp makes awake time run slower than the monotonic one, never faster, so both clocks
  // order the entries alike and a silence is never longer awake than monotonic.
  let lastAwake = Number.NEGATIVE_INFINITY;
  let lastMono = Number.NEGATIVE_INFINITY;
  const read = () => {
    const m = now();
    const a = m - stalls.stalledMs();
    if (a > lastAwake) lastAwake = a;
    if (m > lastMono) lastMono = m;
    return lastAwake;
  };
  // One entry per connection, reused by its touches (no allocation per frame).
  const lastSeen = new Map<Id, { awake: number; mono: number }>();

  const sweep = (): Id[] => {
    const t = read();
    const dead: Id[] = [];
    for (const [id, at] of lastSeen) {
      if (t - at.awake <= timeout) break;
      dead.push(id);
    }
    for (const id of dead) {
      const at = lastSeen.get(id);
      lastSeen.delete(id);
      if (onVerdict !== undefined && at !== undefined)
        tell(id, 'dropped', Math.max(0, lastMono - at.mono - (t - at.awake)));
    }
    return dead;
  };

  return {
    touch(id) {
      const t = read();
      const at = lastSeen.get(id);
      if (at === undefined) {
        lastSeen.set(id, { awake: t, mono: lastMono });
        return;
      }
      const silentAwake = t - at.awake;
      const silentMono = lastMono - at.mono;
      lastSeen.delete(id);
      at.awake = t;
      at.mono = lastMono;
      lastSeen.set(id, at);
      if (onVerdict !== undefined && silentMono > timeout && silentAwake <= timeout)
        tell(id, 'spared', Math.max(0, silentMono - silentAwake));
    },
    remove: (id) => lastSeen.delete(id),
    sweep,
    silentMs(id) {
      const at = lastSeen.get(id);
      return at === undefined ? undefined : read() - at.awake;
    },
    get size() {
      return lastSeen.size;
    },
    ids: () => lastSeen.keys(),
    start(handlers) {
      const timer = setInterval(() => {
        for (const id of sweep()) handlers.drop(id);
        // A copy: a ping answered at once re-inserts its entry, which a live iterator would visit again.
        for (const id of [...lastSeen.keys()]) handlers.ping(id);
      }, timerDelay(interval));
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

const DEFAULT_INTERVAL = 15_000;
const DEFAULT_TIMEOUT = 45_000;
