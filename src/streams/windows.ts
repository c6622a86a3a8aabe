import { type Duration, parseDuration } from '../core/duration.js';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { isPlainObject, knownKeys, nonEmptyString, positiveInt } from '../core/validate.js';
import { jsonSerializer } from '../idempotency/serializer.js';
import { boundedClient } from '../redis/bounded-client.js';
import type { RedisLike } from '../redis/eval.js';
import { storeTimeout } from '../redis/redis-store.js';
import { redisStoreError } from '../redis/store-error.js';
import { compareStreamIds, parseStreamId } from './stream-id.js';
import { firstEntryId, readStreamInfo } from './stream-info.js';
import type { TrimmedPastEvent } from './trimmed-past.js';

/** What every entry of a window has, decoded or not. */
interface WindowEntryBase {
  readonly id: string;
  /** The id's time part (ms): when the entry was added (by the server's clock). */
  readonly at: number;
  /** The event's idempotency id (field `i`), when it has one. */
  readonly eventId: string | undefined;
  /** Every field of the entry as Redis holds it. */
  readonly fields: Readonly<Record<string, string>>;
}

/** An entry whose event (field `e`, tagged JSON: bigints and Dates come back) was decoded. */
export interface DecodedWindowEntry extends WindowEntryBase {
  readonly decoded: true;
  readonly event: unknown;
}

/**
 * An entry with no event to give: `no-event` (no field `e`: written by something other than the
 * producer) or `undecodable` (field `e` is not tagged JSON; `error` says why). Its fields are there
 * as Redis holds them; the rest of the window is read on.
 */
export interface UndecodableWindowEntry extends WindowEntryBase {
  readonly decoded: false;
  readonly problem: 'no-event' | 'undecodable';
  readonly error: Error;
}

/** One entry of a window: decoded, or why not (narrow on `decoded`). */
export type WindowEntry = DecodedWindowEntry | UndecodableWindowEntry;

/** A time window of a stream: {@link readWindow}. */
export interface StreamWindow {
  /** Start (ms, inclusive) and end (ms, exclusive). */
  readonly from: number;
  readonly to: number;
  readonly entries: readonly WindowEntry[];
  /** More entries are in the window than `count` allowed: the window is cut, not whole. */
  readonly truncated: boolean;
  /**
   * `false` when entries of the window may have been trimmed before they were read (the
   * stream's first entry is after `from` and entries were removed): reported through
   * `onTrimmedPast` too, never assumed whole.
   */
  readonly complete: boolean;
}

/** Options of {@link readWindow}. */
export interface ReadWindowOptions {
  client: RedisLike;
  stream: string;
  /** Start, inclusive: ms since the epoch, or a Date. */
  from: number | Date;
  /** End, exclusive. */
  to: number | Date;
  /**
   * At most this many entries are returned (the rest: `truncated`). Default 10,000: a window is
   * held in memory whole, so it needs a bound; 10,000 entries of ~200 bytes are ~2 MB.
   */
  count?: number;
  /**
   * Entries per XRANGE call. Default 1,000: large enough that the round trips do not dominate,
   * small enough that one call does not hold the server for long (XRANGE is O(N) in what it returns).
   */
  pageSize?: number;
  /** Called when the window may have lost entries to trimming (`complete: false`). */
  onTrimmedPast?: (event: TrimmedPastEvent) => void;
  /**
   * How long each command may wait: for the client to be connected (held meanwhile, never
   * queued in the client), then for its reply. Past it the read rejects with `ERR_STORE`
   * (`outcome: 'not-applied'`: a read changes nothing). Default `'10s'`, as `createRedisStore`'s.
   */
  timeout?: Duration;
}

// Every key of ReadWindowOptions: any other is a typo, refused by name (knownKeys).
const READ_WINDOW_OPTIONS = [
  'client',
  'stream',
  'from',
  'to',
  'count',
  'pageSize',
  'onTrimmedPast',
  'timeout',
];

// A window is returned whole, so `count` bounds the memory of one read: 10,000 entries of a
// settlement-sized event (~200 bytes decoded) is ~2 MB, and a minute of a busy stream (~150
// events/s) fits in it. A caller that wants more says so, and owns the memory it asks for.
const DEFAULT_COUNT = 10_000;
// Entries per XRANGE: 1,000 of ~200 bytes is a ~200 KB reply, well under Redis's output buffer
// limits, and keeps each call a fraction of a millisecond of server time.
const DEFAULT_PAGE = 1_000;

/**
 * The entries of `stream` added in [from, to) by time: `XRANGE` by id range (`from-0` to
 * `(to-0`), a page at a time, at most `count` entries, events decoded.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { readWindow } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const stream = `example:${process.pid}:windowed`;
 * await redis.xadd(stream, '1000-0', 'e', JSON.stringify({ n: 1 }), 'i', 'ev1');
 * await redis.xadd(stream, '1500-0', 'e', JSON.stringify({ n: 2 }), 'i', 'ev2');
 * await redis.xadd(stream, '2000-0', 'e', JSON.stringify({ n: 3 }), 'i', 'ev3');
 * const w = await readWindow({ client: redis, stream, from: 1000, to: 2000 });
 * // An entry that cannot be decoded comes back as such (decoded: false), with its fields.
 * w.entries.map((e) => (e.decoded ? e.event : e.problem)); // [{ n: 1 }, { n: 2 }]
 * w.entries.map((e) => e.eventId); // ['ev1', 'ev2']
 * w.complete; // true
 * await redis.del(stream);
 * redis.disconnect();
 * ```
 */
export async function readWindow(options: ReadWindowOptions): Promise<StreamWindow> {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, READ_WINDOW_OPTIONS);
  if (typeof (options.client as RedisLike | undefined)?.call !== 'function') {
    throw new InvalidOptionError(
      'client',
      'an ioredis Redis or Cluster client (with call())',
      options.client,
    );
  }
  // Every command through it: sent only while the client is connected, its wait bounded.
  const client = boundedClient(options.client, storeTimeout(options.timeout));
  const stream = nonEmptyString('stream', options.stream);
  const from = timeArg('from', options.from);
  const to = timeArg('to', options.to);
  if (to < from) throw new InvalidArgumentError('to', `a time at or after \`from\` (${from})`, to);
  const count = options.count === undefined ? DEFAULT_COUNT : positiveInt('count', options.count);
  const pageSize = options.pageSize === undefined ? DEFAULT_PAGE : positiveInt('pageSize', options.pageSize);
  const entries: WindowEntry[] = [];
  let truncated = false;
  let start = `${from}-0`;
  const end = `(${to}-0`;
  try {
    while (from < to) {
      // One more than still fits: that extra entry says the window is cut.
      const want = Math.min(pageSize, count - entries.length + 1);
      const page = (await client.call('XRANGE', stream, start, end, 'COUNT', want)) as [string, string[]][];
      for (const [id, flat] of page) {
        if (entries.length === count) {
          truncated = true;
          break;
        }
        entries.push(decodeEntry(id, flat));
      }
      if (truncated || page.length < want) break;
      start = `(${(page[page.length - 1] as [string, string[]])[0]}`;
    }
  } catch (err) {
    throw redisStoreError('readWindow', err, false, 'read');
  }
  // Read after the pages: trimming removes a prefix, so if the first entry now is at or before
  // `from`, nothing of the window was trimmed while (or before) it was read.
  const complete = from >= to || (await wholeSince(client, stream, from, options.onTrimmedPast));
  return Object.freeze({ from, to, entries: Object.freeze(entries), truncated, complete });
}

async function wholeSince(
  client: RedisLike,
  stream: string,
  from: number,
  onTrimmedPast: ((event: TrimmedPastEvent) => void) | undefined,
): Promise<boolean> {
  const fields = await readStreamInfo(client, stream, 'readWindow');
  if (fields === undefined) return true;
  const firstId = firstEntryId(fields);
  const position = `${from}-0`;
  if (firstId !== undefined && compareStreamIds(parseStreamId(firstId), parseStreamId(position)) <= 0)
    return true;
  if (Number(fields.get('entries-added')) === Number(fields.get('length'))) return true;
  // The stream's newest id is before the window: nothing of the window ever existed.
  const lastGenerated = parseStreamId(String(fields.get('last-generated-id')));
  if (compareStreamIds(lastGenerated, parseStreamId(position)) < 0) return true;
  onTrimmedPast?.(
    Object.freeze({
      type: 'trimmed-past',
      stream,
      group: undefined,
      position,
      firstId,
      missed: undefined,
      pendingTrimmed: 0,
      gapMs: firstId === undefined ? 0 : Math.max(0, Number(parseStreamId(firstId).ms) - from),
    }),
  );
  return false;
}

/** An entry as XRANGE gives it (`[id, [field, value, ...]]`), decoded, or why it cannot be. */
export function decodeEntry(id: string, flat: readonly string[]): WindowEntry {
  const fields: Record<string, string> = Object.create(null);
  for (let i = 0; i + 1 < flat.length; i += 2) fields[String(flat[i])] = String(flat[i + 1]);
  const base = { id, at: Number(parseStreamId(id).ms), eventId: fields['i'], fields: Object.freeze(fields) };
  const e = fields['e'];
  if (e === undefined) {
    const error = new Error(`stream entry ${id} has no field \`e\` (the event)`);
    return Object.freeze({ ...base, decoded: false, problem: 'no-event', error });
  }
  try {
    return Object.freeze({ ...base, decoded: true, event: jsonSerializer.deserialize(e) });
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    return Object.freeze({ ...base, decoded: false, problem: 'undecodable', error });
  }
}

function timeArg(path: string, value: number | Date): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new InvalidArgumentError(path, 'a time: whole ms since the epoch (>= 0) or a valid Date', value);
  }
  return ms;
}

/** Options of {@link streamWindows}. */
export interface StreamWindowsOptions extends Omit<ReadWindowOptions, 'from' | 'to'> {
  /** Start of the first window (ms or Date). */
  from: number | Date;
  /** No window starts at or after this. */
  to: number | Date;
  /** Length of each window. */
  size: Duration;
  /** Distance between window starts. Default `size` (tumbling windows); less: sliding windows. */
  step?: Duration;
}

/**
 * The seed's event windows over a stream: windows of `size` starting at `from`, `from + step`,
 * ... before `to` (tumbling when `step` is `size`, the default; sliding when it is less). Each
 * window is read with {@link readWindow} as it is needed, so memory holds one window.
 *
 * @example
 * ```ts
 * import { Redis } from 'ioredis';
 * import { streamWindows } from 'onceflow/streams';
 * const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
 * const stream = `example:${process.pid}:tumbling`;
 * for (const ms of [1000, 1500, 2000]) await redis.xadd(stream, `${ms}-0`, 'e', JSON.stringify({ ms }));
 * const sizes = [];
 * for await (const w of streamWindows({ client: redis, stream, from: 1000, to: 3000, size: '1s' })) {
 *   sizes.push(w.entries.length);
 * }
 * sizes; // [2, 1]
 * await redis.del(stream);
 * redis.disconnect();
 * ```
 */
export async function* streamWindows(options: StreamWindowsOptions): AsyncGenerator<StreamWindow> {
  if (!isPlainObject(options)) throw new InvalidOptionError('options', 'an object', options);
  knownKeys('', options, [...READ_WINDOW_OPTIONS, 'size', 'step']);
  const from = timeArg('from', options.from);
  const to = timeArg('to', options.to);
  const size = parseDuration(options.size, 'size');
  const step = options.step === undefined ? size : parseDuration(options.step, 'step');
  if (size <= 0) throw new InvalidOptionError('size', 'a positive duration', options.size);
  if (step <= 0 || step > size) {
    throw new InvalidOptionError(
      'step',
      'a positive duration no longer than `size` (no gaps between windows)',
      options.step,
    );
  }
  // What readWindow takes of them (it refuses the others).
  const { size: _size, step: _step, ...read } = options;
  for (let start = from; start < to; start += step) {
    yield await readWindow({ ...read, from: start, to: start + size });
  }
}
