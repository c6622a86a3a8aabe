import { InvalidOptionError } from '../core/errors.js';
import { redisHandleOf } from '../redis/redis-store.js';
import type { Store } from '../store/store.js';
import type { LiveFeed } from './live-feed.js';
import { createMemoryLiveFeed } from './live-feed-memory.js';
import { createRedisLiveFeed } from './live-feed-redis.js';
import type { SessionStateStore } from './session-state.js';
import { MemorySessionState } from './session-state-memory.js';
import { RedisSessionState } from './session-state-redis.js';
import type { UserStreams, UserStreamsOptions } from './user-streams.js';
import { createMemoryUserStreams } from './user-streams-memory.js';
import { createRedisUserStreams } from './user-streams-redis.js';

/**
 * What a gateway node and a publisher share through a store: the users' streams and the feed that
 * tells nodes a stream grew. On a Redis store (Redis or Cluster) they live beside the store's keys,
 * under `<store prefix>ws:`, so every process given the same store meets the same streams; on the
 * memory store they are this process's, one per store object.
 */
export interface WsShared {
  readonly streams: UserStreams;
  readonly live: LiveFeed;
  /** The Redis client and key prefix of the ws state, or `undefined` on the memory store. */
  readonly redis:
    | { readonly client: Parameters<typeof createRedisUserStreams>[0]['client']; readonly prefix: string }
    | undefined;
}

// One per store object: a gateway and a publisher given the same memory store must see one
// stream per user, and a Redis store's feed needs one subscriber connection per process.
const shared = new WeakMap<Store, WsShared>();

/**
 * The streams and feed of `store`, made at the first call with `options` (later calls with other
 * options get the first ones': the stream's retention is decided where messages are appended,
 * so every publisher and node of a deployment must pass the same).
 */
export function wsShared(store: Store, options: UserStreamsOptions): WsShared {
  const known = shared.get(store);
  if (known !== undefined) return known;
  if (typeof store !== 'object' || store === null || typeof store.kind !== 'string')
    throw new InvalidOptionError('store', 'a onceflow store (memoryStore() or createRedisStore(...))', store);
  const handle = redisHandleOf(store);
  let made: WsShared;
  if (handle !== undefined) {
    const prefix = `${handle.prefix}ws:`;
    made = {
      streams: createRedisUserStreams({ ...options, client: handle.bounded, prefix }),
      live: createRedisLiveFeed({ client: handle.client, prefix }),
      // Scripts go through the store's bounded client: an outage fails a call within the store's
      // `timeout`, as every other store call does, instead of the client's own retries.
      redis: { client: handle.bounded, prefix },
    };
  } else if (store.kind === 'memory') {
    made = { streams: createMemoryUserStreams(options), live: createMemoryLiveFeed(), redis: undefined };
  } else {
    throw new InvalidOptionError(
      'store',
      'the memory store or a Redis store (the gateway keeps its sessions and streams there)',
      store.kind,
    );
  }
  shared.set(store, made);
  return made;
}

/** What a gateway's session state is sized by. */
export interface SessionLimits {
  readonly maxInFlight: number;
  readonly sessionTtlMs: number;
  readonly leaseMs: number;
}

// The memory store's session state, one per store object (and limits), like its streams: two
// gateways given one memory store see each other's sessions, as two nodes on one Redis store do.
const memorySessions = new WeakMap<Store, Map<string, MemorySessionState>>();

/** The session state of the gateways of `store`: in Redis beside its streams, or this process's. */
export function wsSessions(store: Store, shared: WsShared, limits: SessionLimits): SessionStateStore {
  if (shared.redis !== undefined) return new RedisSessionState({ ...limits, ...shared.redis });
  let byLimits = memorySessions.get(store);
  if (byLimits === undefined) memorySessions.set(store, (byLimits = new Map()));
  const key = `${limits.maxInFlight}/${limits.sessionTtlMs}/${limits.leaseMs}`;
  let state = byLimits.get(key);
  if (state === undefined) byLimits.set(key, (state = new MemorySessionState(limits)));
  return state;
}
