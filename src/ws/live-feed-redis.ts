import { ClosedError, InvalidOptionError } from '../core/errors.js';
import { knownKeys } from '../core/validate.js';
import type { RedisLike } from '../redis/eval.js';
import { checkOnError, type LiveFeed, type LiveFeedErrorHandler, Watchers } from './live-feed.js';
import { checkUser } from './user-streams.js';

export interface RedisLiveFeedOptions {
  /** An ioredis `Redis` or `Cluster` (ioredis is an optional peer: typed structurally). */
  readonly client: RedisLike;
  /** The channel is `<prefix>live`. Default `onceflow:ws:`, the user streams' default prefix. */
  readonly prefix?: string;
  /** The subscriber connection's CLIENT SETNAME, to find it in CLIENT LIST. Default `onceflow-live`. */
  readonly connectionName?: string;
  /** Where a listener's throw and the subscriber's errors go (see defaultLiveFeedOnError). */
  readonly onError?: LiveFeedErrorHandler;
}

/** The part of an ioredis connection the subscriber uses. */
interface Subscriber {
  on(event: string, listener: (...args: never[]) => void): unknown;
  connect(): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  disconnect(): void;
}

interface Duplicable {
  duplicate(override: Record<string, unknown>): Subscriber;
}

interface ClusterLike {
  nodes(role: 'all'): Duplicable[];
}

/**
 * Reconnect delays of the subscriber, doubling from 50 ms to 2 s (ioredis's own default cap):
 * every notice published while it is down is lost (and made up for by one call of every listener
 * once it is back), so it comes back quickly, yet a Redis that is down costs a node at most one
 * connection attempt per 2 s.
 */
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 2000;

const NAME = /^[!-~]{1,128}$/;

/**
 * A live feed over Redis pub/sub: `published` is one PUBLISH of the user on `<prefix>live`, and
 * each process holds one subscriber connection while it has watchers (made on the first watch,
 * closed when the last one leaves and on close). Every node receives every user's notices and
 * drops those of users it does not watch: one small message per publish per node.
 *
 * On a Cluster, PUBLISH reaches the subscribers of every node, so the subscriber is a connection
 * to any one node (a duplicate of one of the client's node connections), moved to another node
 * when it drops. (ioredis's `Cluster.duplicate()` would subscribe through its own subscriber,
 * which moves and resubscribes silently: the feed could not tell when to call its listeners.)
 *
 * After each (re)subscribe, every listener is called once: notices published while the subscriber
 * was down, or before its first SUBSCRIBE took effect, are lost, and a call makes up for them.
 */
export function createRedisLiveFeed(options: RedisLiveFeedOptions): LiveFeed {
  knownKeys('', options, ['client', 'prefix', 'connectionName', 'onError']);
  const { client } = options;
  const cluster = (client as { isCluster?: unknown } | undefined)?.isCluster === true;
  if (
    typeof client?.call !== 'function' ||
    typeof (client as unknown as Record<string, unknown>)[cluster ? 'nodes' : 'duplicate'] !== 'function'
  ) {
    throw new InvalidOptionError('client', 'an ioredis client (Redis or Cluster)', client);
  }
  const prefix = options.prefix ?? 'onceflow:ws:';
  if (typeof prefix !== 'string') throw new InvalidOptionError('prefix', 'a string', prefix);
  const connectionName = options.connectionName ?? 'onceflow-live';
  if (typeof connectionName !== 'string' || !NAME.test(connectionName)) {
    throw new InvalidOptionError(
      'connectionName',
      '1 to 128 printable ASCII characters, no space',
      connectionName,
    );
  }
  const onError = checkOnError(options.onError);
  const channel = `${prefix}live`;
  const watchers = new Watchers(onError);
  let closed = false;
  let conn: Subscriber | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failures = 0;

  /** A connection to subscribe on: the client's duplicate, or one of a cluster's nodes'. */
  function source(): Duplicable | undefined {
    if (!cluster) return client as unknown as Duplicable;
    const nodes = (client as unknown as ClusterLike).nodes('all');
    return nodes[Math.floor(Math.random() * nodes.length)];
  }

  function start(): void {
    if (closed || conn !== undefined || timer !== undefined || watchers.users === 0) return;
    const from = source();
    // A cluster client that has not discovered its nodes yet: try again shortly.
    if (from === undefined) {
      retry();
      return;
    }
    const c = from.duplicate({
      connectionName,
      lazyConnect: true,
      // The feed resubscribes itself, so it knows when the subscription is back.
      autoResubscribe: false,
      // One connection per attempt: a dropped one ends, and the next may go to another node.
      retryStrategy: null,
      readOnly: false,
      enableOfflineQueue: true,
    });
    conn = c;
    c.on('error', (err: unknown) => {
      if (conn === c) onError(err, 'connection');
    });
    c.on('message', (ch: string, user: string) => {
      if (conn === c && ch === channel) watchers.notify(user);
    });
    c.on('ready', () => {
      if (conn !== c) return;
      c.subscribe(channel).then(
        () => {
          if (conn !== c) return;
          failures = 0;
          watchers.notifyAll();
        },
        // Not subscribed (an ACL refusal, a drop mid-way): a new connection tries again.
        () => c.disconnect(),
      );
    });
    c.on('end', () => {
      if (conn !== c) return;
      conn = undefined;
      retry();
    });
    c.connect().catch(() => {
      // Reported through 'error'; 'end' follows and retries.
    });
  }

  function retry(): void {
    if (closed || timer !== undefined || watchers.users === 0) return;
    const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(failures, 16));
    failures++;
    timer = setTimeout(() => {
      timer = undefined;
      start();
    }, delay);
  }

  function stop(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    failures = 0;
    const c = conn;
    conn = undefined;
    c?.disconnect();
  }

  return {
    watch(user, listener) {
      if (closed) throw new ClosedError('live feed');
      const unsubscribe = watchers.add(user, listener, () => {
        if (watchers.users === 0) stop();
      });
      start();
      return unsubscribe;
    },
    async published(user) {
      checkUser(user);
      if (closed) throw new ClosedError('live feed');
      await client.call('PUBLISH', channel, user);
    },
    async close() {
      closed = true;
      watchers.clear();
      stop();
    },
  };
}
