import { positiveInt } from '../core/validate.js';
import {
  checkClock,
  checkLimit,
  checkPosition,
  checkPublishOptions,
  checkSession,
  checkType,
  checkUser,
  encodeBody,
  newEpoch,
  type ReadResult,
  type ResolvedUserStreamsOptions,
  resolveUserStreamsOptions,
  type SessionPosition,
  type StreamMessage,
  type UserStreams,
  type UserStreamsOptions,
} from './user-streams.js';

export interface MemoryUserStreamsOptions extends UserStreamsOptions {
  /**
   * Users whose streams are held; past it the least recently used user's stream is dropped (its
   * next publish or read starts a new epoch, as after a lost store). Default 10,000: with the
   * default `maxLength` and ~500-byte bodies, ~5 GB at the very worst (plus `publishDedup` ids
   * each, ~40 KiB with ULIDs), far less in practice.
   */
  readonly maxUsers?: number;
  /** Sessions whose positions are held; past it the least recently acked goes. Default 100,000 (~100 bytes each). */
  readonly maxSessions?: number;
  /** The clock, in ms (tests pass a fake one). Default `Date.now`. */
  readonly now?: () => number;
}

interface Entry {
  readonly offset: number;
  readonly type: string;
  readonly body: string;
  readonly at: number;
}

interface Stream {
  readonly epoch: string;
  end: number;
  /** Retained entries, oldest first, from `entries[head]` (a moving head: dropping is O(1)). */
  entries: Entry[];
  head: number;
  expiresAt: number;
  /**
   * Publish id to its offset, the last `publishDedup` ids; Map order is publish order. Made on the
   * first publish with an id: a user who only reads (an idle connection) holds no Map.
   */
  ids: Map<string, number> | undefined;
}

interface Kept extends SessionPosition {
  readonly expiresAt: number;
}

/** One process's user streams; the reference model of the Redis store. */
export function createMemoryUserStreams(options: MemoryUserStreamsOptions = {}): UserStreams {
  const o = resolveUserStreamsOptions(options as MemoryUserStreamsOptions & Record<string, unknown>, [
    'maxUsers',
    'maxSessions',
    'now',
  ]);
  const maxUsers = positiveInt('maxUsers', options.maxUsers ?? 10_000);
  const maxSessions = positiveInt('maxSessions', options.maxSessions ?? 100_000);
  const now = checkClock(options.now) ?? Date.now;
  // Map order is insertion order: re-inserting on use keeps the least recently used first.
  const streams = new Map<string, Stream>();
  const sessions = new Map<string, Kept>();

  /** The user's live stream (created when missing or idle past idleTtlMs), retention applied. */
  function open(user: string, t: number): Stream {
    let s = streams.get(user);
    streams.delete(user);
    if (s === undefined || t >= s.expiresAt) {
      s = { epoch: newEpoch(), end: 0, entries: [], head: 0, expiresAt: 0, ids: undefined };
    }
    s.expiresAt = t + o.idleTtlMs;
    streams.set(user, s);
    if (streams.size > maxUsers) streams.delete(streams.keys().next().value as string);
    trim(s, t, o);
    return s;
  }

  return {
    async publish(user, type, body, options) {
      checkUser(user);
      checkType(type);
      const text = encodeBody(body, o.maxBodyBytes);
      const id = checkPublishOptions(options);
      const t = now();
      const s = open(user, t);
      const first = id === undefined ? undefined : s.ids?.get(id);
      if (first !== undefined) return { epoch: s.epoch, offset: first };
      s.end += 1;
      s.entries.push({ offset: s.end, type, body: text, at: t });
      trim(s, t, o);
      if (id !== undefined) {
        s.ids ??= new Map();
        s.ids.set(id, s.end);
        if (s.ids.size > o.publishDedup) s.ids.delete(s.ids.keys().next().value as string);
      }
      return { epoch: s.epoch, offset: s.end };
    },

    async read(user, from, limit) {
      checkUser(user);
      const f = from === undefined ? undefined : checkPosition('from', from);
      checkLimit(limit, o.maxReadLimit);
      const s = open(user, now());
      const first = s.head < s.entries.length ? (s.entries[s.head] as Entry).offset : s.end + 1;
      const none: ReadResult = { epoch: s.epoch, end: s.end, recovered: false, messages: [] };
      if (f === undefined || f.epoch !== s.epoch || f.offset > s.end || f.offset + 1 < first) return none;
      const messages: StreamMessage[] = [];
      const start = s.head + (f.offset + 1 - first);
      for (let i = start; i < s.entries.length && messages.length < limit; i++) {
        const e = s.entries[i] as Entry;
        messages.push({ offset: e.offset, type: e.type, body: JSON.parse(e.body) });
      }
      return { epoch: s.epoch, end: s.end, recovered: true, messages };
    },

    async ackPosition(session, user, position) {
      checkSession(session);
      checkUser(user);
      const p = checkPosition('position', position);
      const t = now();
      const old = live(session, t);
      sessions.delete(session);
      const keep =
        old !== undefined && old.user === user && old.epoch === p.epoch && old.offset >= p.offset
          ? old.offset
          : p.offset;
      const kept: Kept = { user, epoch: p.epoch, offset: keep, expiresAt: t + o.sessionTtlMs };
      sessions.set(session, kept);
      if (sessions.size > maxSessions) sessions.delete(sessions.keys().next().value as string);
      return { user, epoch: p.epoch, offset: keep };
    },

    async position(session) {
      checkSession(session);
      const k = live(session, now());
      return k === undefined ? undefined : { user: k.user, epoch: k.epoch, offset: k.offset };
    },
  };

  function live(session: string, t: number): Kept | undefined {
    const k = sessions.get(session);
    if (k !== undefined && t >= k.expiresAt) {
      sessions.delete(session);
      return undefined;
    }
    return k;
  }
}

/**
 * Drops the oldest entries past `maxLength`, then those at the head no younger than `maxAgeMs`:
 * always a prefix, so what is kept has no gap (the Redis script trims the same way).
 */
function trim(s: Stream, t: number, o: ResolvedUserStreamsOptions): void {
  const excess = s.entries.length - s.head - o.maxLength;
  if (excess > 0) s.head += excess;
  if (o.maxAgeMs > 0) {
    while (s.head < s.entries.length && t - (s.entries[s.head] as Entry).at >= o.maxAgeMs) s.head++;
  }
  // Compacts once the dropped part outweighs the kept part: amortized O(1) per entry.
  if (s.head > 32 && s.head * 2 > s.entries.length) {
    s.entries = s.entries.slice(s.head);
    s.head = 0;
  }
}
