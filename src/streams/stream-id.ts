import { InvalidArgumentError } from '../core/errors.js';

/**
 * A stream entry id `ms-seq` as two bigints: both parts are unsigned 64-bit in Redis, past what a
 * `number` holds exactly, and ids compare by (ms, seq), never as strings ('10-0' < '9-0' as text).
 */
export interface StreamId {
  readonly ms: bigint;
  readonly seq: bigint;
}

const U64_MAX = (1n << 64n) - 1n;
const ID = /^(\d{1,20})-(\d{1,20})$/;

/**
 * Reads an entry id as Redis writes it (`1700000000000-0`); `path` names the argument in the error.
 *
 * @example
 * ```ts
 * import { parseStreamId } from 'onceflow/streams';
 * parseStreamId('1700000000000-3'); // { ms: 1700000000000n, seq: 3n }
 * ```
 */
export function parseStreamId(text: string, path = 'id'): StreamId {
  const m = ID.exec(text);
  const ms = m ? BigInt(m[1] as string) : -1n;
  const seq = m ? BigInt(m[2] as string) : -1n;
  if (ms < 0n || seq < 0n || ms > U64_MAX || seq > U64_MAX) {
    throw new InvalidArgumentError(path, 'a stream entry id `ms-seq` (two unsigned 64-bit integers)', text);
  }
  return { ms, seq };
}

/** `-1`, `0` or `1` as `a` is before, equal to or after `b` in stream order. */
export function compareStreamIds(a: StreamId, b: StreamId): -1 | 0 | 1 {
  if (a.ms !== b.ms) return a.ms < b.ms ? -1 : 1;
  if (a.seq !== b.seq) return a.seq < b.seq ? -1 : 1;
  return 0;
}

/** The id as Redis reads it. */
export function formatStreamId(id: StreamId): string {
  return `${id.ms}-${id.seq}`;
}

/**
 * The smallest id after `id` (what `XRANGE (id` starts from); `undefined` after the last id there
 * can be.
 */
export function nextStreamId(id: StreamId): StreamId | undefined {
  if (id.seq < U64_MAX) return { ms: id.ms, seq: id.seq + 1n };
  if (id.ms < U64_MAX) return { ms: id.ms + 1n, seq: 0n };
  return undefined;
}

/** The first id a stream can hold at or after the time `ms` (an XADD at `ms` gets `ms-0` or later). */
export function streamIdAt(ms: number | bigint): StreamId {
  return { ms: BigInt(ms), seq: 0n };
}

/**
 * Negative when entry id text `a` comes before `b` in the stream, 0 when equal, positive after:
 * {@link compareStreamIds} without parsing (both parts are canonical unsigned decimals, so the
 * longer is larger, then the text decides), for the consumer's hot path.
 */
export function compareIdText(a: string, b: string): number {
  if (a === b) return 0;
  const da = a.indexOf('-');
  const db = b.indexOf('-');
  const c = compareDecimal(a.slice(0, da), b.slice(0, db));
  return c !== 0 ? c : compareDecimal(a.slice(da + 1), b.slice(db + 1));
}

function compareDecimal(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
