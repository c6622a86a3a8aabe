import { InvalidOptionError } from '../core/errors.js';
import { evalScript, type RedisLike } from '../redis/eval.js';
import { escapeId } from '../redis/keys.js';
import { scripts } from '../redis/scripts.generated.js';
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
  resolveUserStreamsOptions,
  type StreamMessage,
  type UserStreams,
  type UserStreamsOptions,
} from './user-streams.js';

export interface RedisUserStreamsOptions extends UserStreamsOptions {
  /** An ioredis `Redis` or `Cluster` (ioredis is an optional peer: typed structurally). */
  readonly client: RedisLike;
  /** Every key starts with it. Default `onceflow:ws:`. */
  readonly prefix?: string;
  /**
   * The clock the scripts judge age and idleness by, in ms. Default: the Redis server's TIME
   * (one clock for every node). Tests pass a fake one to run the same steps as a memory store.
   */
  readonly now?: () => number;
}

/**
 * The key layout (each user's keys share one {hash tag}, so each script runs on one Cluster slot):
 *
 *   <prefix>{u:<user>}:m     hash    epoch, end, idle deadline (lib/user-stream-open.lua)
 *   <prefix>{u:<user>}:s     stream  the messages, entry id '<offset>-1'
 *   <prefix>{u:<user>}:d     zset    publish ids scored by offset, the newest `publishDedup`
 *   <prefix>{p:<session>}    hash    the session's acked position (user-stream-ack.lua)
 *
 * Users are escaped (keys.ts escapeId) so no user can end the hash tag early or imitate another's
 * keys; a session's charset has no `{`, `}` or `:`.
 */
export function userStreamKeys(prefix: string, user: string): [meta: string, stream: string, ids: string] {
  const base = `${prefix}{u:${escapeId(user)}}:`;
  return [`${base}m`, `${base}s`, `${base}d`];
}

export function sessionPositionKey(prefix: string, session: string): string {
  return `${prefix}{p:${session}}`;
}

/** User streams in Redis: any node of a deployment resumes any client (docs/ws-protocol.md §4). */
export function createRedisUserStreams(options: RedisUserStreamsOptions): UserStreams {
  const o = resolveUserStreamsOptions(options as RedisUserStreamsOptions & Record<string, unknown>, [
    'client',
    'prefix',
    'now',
  ]);
  const { client } = options;
  if (typeof client?.call !== 'function') {
    throw new InvalidOptionError('client', 'an ioredis client (Redis or Cluster)', client);
  }
  const prefix = options.prefix ?? 'onceflow:ws:';
  if (typeof prefix !== 'string') throw new InvalidOptionError('prefix', 'a string', prefix);
  const clock = checkClock(options.now);
  const now = () => (clock === undefined ? '' : String(clock()));

  return {
    async publish(user, type, body, options) {
      checkUser(user);
      checkType(type);
      const text = encodeBody(body, o.maxBodyBytes);
      const id = checkPublishOptions(options);
      const reply = (await evalScript(client, scripts.userStreamPublish, userStreamKeys(prefix, user), [
        newEpoch(),
        type,
        text,
        o.maxLength,
        o.maxAgeMs,
        o.idleTtlMs,
        now(),
        id ?? '',
        o.publishDedup,
      ])) as [string, number];
      return { epoch: String(reply[0]), offset: Number(reply[1]) };
    },

    async read(user, from, limit) {
      checkUser(user);
      const f = from === undefined ? undefined : checkPosition('from', from);
      checkLimit(limit, o.maxReadLimit);
      const reply = (await evalScript(client, scripts.userStreamRead, userStreamKeys(prefix, user), [
        newEpoch(),
        f?.epoch ?? '',
        f?.offset ?? 0,
        limit,
        o.maxAgeMs,
        o.idleTtlMs,
        now(),
      ])) as unknown[];
      const messages: StreamMessage[] = [];
      for (let i = 3; i < reply.length; i += 3) {
        messages.push({
          offset: Number(reply[i]),
          type: String(reply[i + 1]),
          body: JSON.parse(String(reply[i + 2])),
        });
      }
      return { epoch: String(reply[0]), end: Number(reply[1]), recovered: Number(reply[2]) === 1, messages };
    },

    async ackPosition(session, user, position) {
      checkSession(session);
      checkUser(user);
      const p = checkPosition('position', position);
      const kept = await evalScript(
        client,
        scripts.userStreamAck,
        [sessionPositionKey(prefix, session)],
        [user, p.epoch, p.offset, o.sessionTtlMs, now()],
      );
      return { user, epoch: p.epoch, offset: Number(kept) };
    },

    async position(session) {
      checkSession(session);
      const reply = (await evalScript(
        client,
        scripts.userStreamPosition,
        [sessionPositionKey(prefix, session)],
        [now()],
      )) as unknown[];
      if (reply.length === 0) return undefined;
      return { user: String(reply[0]), epoch: String(reply[1]), offset: Number(reply[2]) };
    },
  };
}
