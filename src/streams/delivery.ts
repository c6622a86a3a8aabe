import type { Serializer } from '../idempotency/serializer.js';

/** One delivery of a stream entry to a consumer's handler. */
export interface Delivery<E = unknown> {
  /** The stream entry id (`<ms>-<seq>`). */
  readonly id: string;
  /** The event, decoded from the entry's field `e`. */
  readonly event: E;
  /** The event's idempotency id (field `i`), when the producer gave one. */
  readonly eventId: string | undefined;
  /**
   * How many times the entry has been delivered, this delivery included (Redis's delivery count,
   * also this delivery's fencing token): 1 the first time, more after failures and reclaims.
   */
  readonly deliveries: number;
  /** Every field of the entry as Redis holds it. */
  readonly fields: Readonly<Record<string, string>>;
  /**
   * The entry's place in its stream as one integer, `ms * 2^64 + seq` of its id: pass it as the
   * ledger entry's `order`, so that a redelivery arriving after the owner's window moved on is
   * answered `stale` (not booked again). See docs/streams.md, "Exactly once".
   */
  readonly order: bigint;
}

/**
 * The ledger order of entry id `ms-seq`: `ms * 2^64 + seq`, which compares as the ids do.
 *
 * Why the stream id and not an order the producer carries: the server assigns it when the entry is
 * appended, increasing along the stream, and it is the entry's identity, so every redelivery and
 * reclaim of an entry carries the same order, with no counter the producers must agree on. With
 * `key` naming the ledger owner (or a key that contains it), one consumer books an owner's entries
 * in stream id order, so its orders rise as its window moves on and an entry evicted from the
 * window is at or below the horizon when it comes again: `stale`, never applied twice. What it does
 * not cover: the same event appended twice (a second XADD has a newer id), which the producer's
 * dedup keeps out of the stream, and entries of one owner booked out of stream order (two
 * consumers sharing an owner, a reclaim from a crashed one), whose late first delivery may then be
 * answered `stale` as well: `ledger.resolve` tells a new one from a repeat.
 */
export function streamOrder(id: string): bigint {
  const dash = id.indexOf('-');
  return (BigInt(id.slice(0, dash)) << 64n) | BigInt(id.slice(dash + 1));
}

/** An entry as read from the stream, before its event is decoded. */
export interface RawEntry {
  readonly id: string;
  readonly fields: Record<string, string>;
}

/** The entries of an XREADGROUP / XAUTOCLAIM reply's entry list (`[[id, [f, v, ...]], ...]`). */
export function parseEntries(list: unknown): RawEntry[] {
  const out: RawEntry[] = [];
  if (!Array.isArray(list)) return out;
  for (const item of list as [string, string[] | null][]) {
    const [id, flat] = item;
    // A pending entry deleted from the stream reads back with no fields (a history read).
    const fields: Record<string, string> = Object.create(null);
    if (Array.isArray(flat))
      for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
    out.push({ id, fields });
  }
  return out;
}

/** The decoded delivery, or the reason it cannot be (no field `e`, text the serializer refuses). */
export function decodeDelivery<E>(
  entry: RawEntry,
  deliveries: number,
  serializer: Serializer,
): { delivery: Delivery<E> } | { error: Error } {
  const text = entry.fields.e;
  if (text === undefined)
    return { error: new Error(`stream entry ${entry.id} has no field \`e\` (the event)`) };
  let event: E;
  try {
    event = serializer.deserialize(text) as E;
  } catch (err) {
    return { error: err instanceof Error ? err : new Error(String(err)) };
  }
  return {
    delivery: {
      id: entry.id,
      event,
      eventId: entry.fields.i,
      deliveries,
      fields: entry.fields,
      order: streamOrder(entry.id),
    },
  };
}

// Dead letters keep an error's message up to 1 KiB (the shared format): enough to tell the failure,
// and a dead-letter stream of poison events never holds their stack traces.
const ERROR_BYTES = 1024;

/** An error's message, cut to at most 1024 bytes of UTF-8 (never inside a character). */
export function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= ERROR_BYTES) return text;
  let end = ERROR_BYTES;
  // Back to the start of a character: continuation bytes are 0b10xxxxxx.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
