import type { Duration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { isPlainObject, knownKeys, nonEmptyString, nonNegativeInt } from '../core/validate.js';
import { boundedClient } from '../redis/bounded-client.js';
import { evalScript, type RedisLike } from '../redis/eval.js';
import { storeTimeout } from '../redis/redis-store.js';
import { scripts } from '../redis/scripts.generated.js';
import { redisStoreError } from '../redis/store-error.js';
import { compareStreamIds, parseStreamId } from './stream-id.js';
import { firstEntryId, readStreamInfo } from './stream-info.js';

/**
 * A reader whose position is behind the stream's first entry: entries it had not read were
 * trimmed (or deleted) before it got to them. Reported, never skipped silently.
 */
export interface TrimmedPastEvent {
  readonly type: 'trimmed-past';
  readonly stream: string;
  /** The consumer group, for a group reader. */
  readonly group: string | undefined;
  /** The reader's position: the group's last-delivered-id, or the plain reader's last id. */
  readonly position: string;
  /** The stream's first entry now, `undefined` when it is empty. */
  readonly firstId: string | undefined;
  /** Entries gone that the reader never read; `undefined` when the server cannot count them. */
  readonly missed: number | undefined;
  /** Pending (delivered, unacknowledged) entries of the group whose content is gone. */
  readonly pendingTrimmed: number;
  /** Milliseconds between the reader's position and the first entry (0 when it is empty). */
  readonly gapMs: number;
}

/** What {@link checkTrimmedPast} found. */
export interface TrimmedPastCheck {
  /** Whether the group (or reader) lost entries to trimming: see {@link TrimmedPastEvent}. */
  readonly behind: boolean;
  /** `false`: the stream or the group does not exist (nothing is behind). */
  readonly exists: boolean;
  readonly firstId: string | undefined;
  readonly lastDeliveredId: string | undefined;
  readonly lastGeneratedId: string | undefined;
  readonly missed: number | undefined;
  readonly pendingTrimmed: number;
  readonly gapMs: number;
  /** The event to report when `behind` (else `undefined`). */
  readonly event: TrimmedPastEvent | undefined;
}

/** Options of {@link checkTrimmedPast}. */
export interface CheckTrimmedPastOptions {
  /**
   * At most this many pending entries below the first entry are counted (one XPENDING page, in
   * the script). Default 1000: enough to tell "a few" from "many" in a report, and one page of a
   * size XPENDING serves in well under a millisecond.
   */
  pendingCap?: number;
  /**
   * How long the read may wait: for the client to be connected (held meanwhile, never queued in
   * the client), then for its reply. Past it the check rejects with `ERR_STORE` (`outcome:
   * 'not-applied'`). Default `'10s'`, as `createRedisStore`'s.
   */
  timeout?: Duration;
}

/** Options of {@link checkReaderPosition}. */
export interface CheckReaderPositionOptions {
  /** As {@link CheckTrimmedPastOptions.timeout}. Default `'10s'`. */
  timeout?: Duration;
}

const NOT_FOUND = Object.freeze({
  behind: false,
  exists: false,
  firstId: undefined,
  lastDeliveredId: undefined,
  lastGeneratedId: undefined,
  missed: undefined,
  pendingTrimmed: 0,
  gapMs: 0,
  event: undefined,
});

/**
 * Whether consumer group `group` of `stream` is behind the stream's first entry: entries after its
 * last-delivered-id that it never read are gone (`missed`, counted from the server's
 * `entries-added` and the group's `entries-read`), or entries delivered to it and not acknowledged
 * are (`pendingTrimmed`). Read in one script, so the figures are of one instant. When the server
 * does not know the group's `entries-read` (a group set to an arbitrary id), `missed` is
 * `undefined` and `behind` is `true` whenever entries after the group's position may be gone:
 * reported, not assumed away.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { checkTrimmedPast } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const stream = `example:${process.pid}:audited`;
 * for (const seq of [1, 2, 3, 4]) await redis.xadd(stream, `1000-${seq}`, 'e', String(seq));
 * await redis.xgroup('CREATE', stream, 'billing', '0');
 * await redis.xtrim(stream, 'MINID', '1000-3'); // a plain XTRIM, blind to the group
 * const check = await checkTrimmedPast(redis, stream, 'billing');
 * [check.behind, check.missed, check.firstId]; // [true, 2, '1000-3']
 * check.event?.type; // 'trimmed-past'
 * await redis.del(stream);
 * redis.disconnect();
 * ```
 */
export async function checkTrimmedPast(
  client: RedisLike,
  stream: string,
  group: string,
  options: CheckTrimmedPastOptions = {},
): Promise<TrimmedPastCheck> {
  nonEmptyString('stream', stream);
  nonEmptyString('group', group);
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object { pendingCap }', options);
  knownKeys('options', options, ['pendingCap', 'timeout']);
  const cap = options.pendingCap === undefined ? 1000 : nonNegativeInt('pendingCap', options.pendingCap);
  const redis = boundedClient(client, storeTimeout((options as CheckTrimmedPastOptions).timeout));
  let reply: unknown;
  try {
    reply = await evalScript(redis, scripts.streamPosition, [stream], [group, cap]);
  } catch (err) {
    throw redisStoreError('checkTrimmedPast', err, false, 'read');
  }
  const r = (reply as unknown[]).map((x) => String(x));
  if (r[0] !== 'ok') return NOT_FOUND;
  const [, first, lastGenerated, added, length, lastDelivered, entriesRead, , pendingTrimmedText] = r as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const firstId = first === '' ? undefined : first;
  const pos = parseStreamId(lastDelivered, 'last-delivered-id');
  const pendingTrimmed = Number(pendingTrimmedText);
  // Trimming removes a prefix of the stream: a position at or after the first entry lost nothing
  // it had not read (XDEL can punch holes anywhere, but that is a deletion by choice, not retention).
  const beforeFirst = firstId === undefined || compareStreamIds(pos, parseStreamId(firstId)) < 0;
  let missed: number | undefined = 0;
  if (beforeFirst) {
    // A group still at 0-0 has read nothing, though the server leaves its entries-read unset
    // until its first read.
    const read = entriesRead !== '' ? entriesRead : lastDelivered === '0-0' ? '0' : '';
    if (read !== '') {
      // Every remaining entry is after the position, so what the group has not read and is gone
      // is what it has not read, less what remains.
      missed = Math.max(0, Number(added) - Number(read) - Number(length));
    } else {
      // Unknown count: entries after the position existed if the stream ever had an id past it
      // and any entry was removed.
      const removed = Number(added) > Number(length);
      const later = compareStreamIds(parseStreamId(lastGenerated), pos) > 0;
      missed = removed && later ? undefined : 0;
    }
  }
  const behind = missed === undefined || missed > 0 || pendingTrimmed > 0;
  const gapMs = firstId === undefined ? 0 : Math.max(0, Number(parseStreamId(firstId).ms - pos.ms));
  const event: TrimmedPastEvent | undefined = behind
    ? Object.freeze({
        type: 'trimmed-past',
        stream,
        group,
        position: lastDelivered,
        firstId,
        missed,
        pendingTrimmed,
        gapMs,
      })
    : undefined;
  return Object.freeze({
    behind,
    exists: true,
    firstId,
    lastDeliveredId: lastDelivered,
    lastGeneratedId: lastGenerated,
    missed,
    pendingTrimmed,
    gapMs,
    event,
  });
}

/** Options of {@link checkReaderPosition}. */
export interface ReaderPosition {
  /** The id of the last entry the reader read (`'0-0'` before the first). */
  lastId: string;
  /**
   * How many entries of the stream the reader has read, from its first ever entry, if it counts
   * them: then `missed` is exact. Without it, a reader before the first entry is reported as
   * behind when any entry was ever removed from the stream (`missed` `undefined`): the server keeps
   * no record of which ids a trim removed.
   */
  entriesRead?: number;
}

/**
 * {@link checkTrimmedPast} for a plain reader (`XRANGE`/`XREAD`, no group): the server does not
 * know its position, so the reader gives it.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { checkReaderPosition } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const stream = `example:${process.pid}:read-plainly`;
 * for (const seq of [1, 2, 3]) await redis.xadd(stream, `1000-${seq}`, 'e', String(seq));
 * await redis.xtrim(stream, 'MINID', '1000-3');
 * // A reader that read 1000-1 only: 1000-2 went before it got there.
 * (await checkReaderPosition(redis, stream, { lastId: '1000-1', entriesRead: 1 })).missed; // 1
 * (await checkReaderPosition(redis, stream, { lastId: '1000-2', entriesRead: 2 })).behind; // false
 * await redis.del(stream);
 * redis.disconnect();
 * ```
 */
export async function checkReaderPosition(
  client: RedisLike,
  stream: string,
  position: ReaderPosition,
  options: CheckReaderPositionOptions = {},
): Promise<TrimmedPastCheck> {
  nonEmptyString('stream', stream);
  if (!isPlainObject(position)) {
    throw new InvalidArgumentError('position', 'an object { lastId, entriesRead? }', position);
  }
  knownKeys('position', position, ['lastId', 'entriesRead']);
  const pos = parseStreamId(position.lastId, 'lastId');
  const counted = position.entriesRead;
  if (counted !== undefined && (!Number.isSafeInteger(counted) || counted < 0)) {
    throw new InvalidArgumentError('entriesRead', 'a non-negative safe integer', counted);
  }
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object { timeout }', options);
  knownKeys('options', options, ['timeout']);
  const redis = boundedClient(client, storeTimeout((options as CheckReaderPositionOptions).timeout));
  const fields = await readStreamInfo(redis, stream, 'checkReaderPosition');
  if (fields === undefined) return NOT_FOUND;
  const firstId = firstEntryId(fields);
  const lastGenerated = String(fields.get('last-generated-id'));
  const added = Number(fields.get('entries-added'));
  const length = Number(fields.get('length'));
  const beforeFirst = firstId === undefined || compareStreamIds(pos, parseStreamId(firstId)) < 0;
  let missed: number | undefined = 0;
  if (beforeFirst) {
    if (counted !== undefined) missed = Math.max(0, added - counted - length);
    else {
      const later = compareStreamIds(parseStreamId(lastGenerated), pos) > 0;
      missed = added > length && later ? undefined : 0;
    }
  }
  const behind = missed === undefined || missed > 0;
  const gapMs = firstId === undefined ? 0 : Math.max(0, Number(parseStreamId(firstId).ms - pos.ms));
  return Object.freeze({
    behind,
    exists: true,
    firstId,
    lastDeliveredId: position.lastId,
    lastGeneratedId: lastGenerated,
    missed,
    pendingTrimmed: 0,
    gapMs,
    event: behind
      ? Object.freeze({
          type: 'trimmed-past' as const,
          stream,
          group: undefined,
          position: position.lastId,
          firstId,
          missed,
          pendingTrimmed: 0,
          gapMs,
        })
      : undefined,
  });
}
