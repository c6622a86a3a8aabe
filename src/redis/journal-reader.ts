// Journal reads of the Redis store. Each owner's journal is one stream in seq order (one XADD per
// applied entry, see lua/ledger-apply.lua), so a query reads it forward in bounded XRANGE pages
// and stops once it holds `limit` matching entries; `after` first skips the entries at or below it
// with a search over the stream ids (seq grows along the stream), so paging one owner's journal
// costs a few round trips whatever its length. A query over several owners merges their streams
// (one cursor per owner, k-way) in server-time order, then owner, then seq.
import { ownRecord } from '../core/own-record.js';
import { orderFromString } from '../core/validate.js';
import type { Balances, JournalEntry, JournalQuery } from '../store/store.js';
import type { RedisLike } from './eval.js';
import { ledgerOwnersKey, ownerKeys, scopeOwnersKey } from './keys.js';

/** One stream entry's fields as a journal entry, with its server time stamp in microseconds. */
function parseEntry(owner: string, fields: string[]): JournalEntry & { us: bigint } {
  const map = new Map<string, string>();
  for (let i = 0; i < fields.length; i += 2) map.set(fields[i] as string, fields[i + 1] as string);
  const pairs: [string, bigint][] = [];
  for (const [k, v] of map) if (k.startsWith('d:')) pairs.push([k.slice(2), BigInt(v)]);
  const deltas: Balances = ownRecord(pairs);
  const seconds = BigInt(map.get('s') ?? '0');
  const micros = BigInt(map.get('us') ?? '0');
  const entry: { -readonly [K in keyof JournalEntry]: JournalEntry[K] } & { us: bigint } = {
    seq: Number(map.get('seq')),
    owner,
    signature: map.get('sig') ?? '',
    deltas,
    at: Number(seconds * 1000n + micros / 1000n),
    us: seconds * 1_000_000n + micros,
  };
  const scope = map.get('scope');
  if (scope !== undefined) entry.scope = scope;
  const order = map.get('order');
  if (order !== undefined) entry.order = orderFromString(order);
  const meta = map.get('meta');
  if (meta !== undefined) entry.meta = JSON.parse(meta);
  return entry;
}

/** An entry as read, with its time stamp in microseconds (the merge order across owners). */
type ReadEntry = JournalEntry & { us: bigint };
/** One stream entry as XRANGE returns it. */
type StreamEntry = [id: string, fields: string[]];

// Page sizes and the `after` search. An XRANGE reply costs Redis about 1 µs per entry plus one
// round trip (~50-100 µs locally; `redis-cli --latency` and the XRANGE line of INFO commandstats
// show both), so a page is worth filling up to where entries dominate:
// 1000 entries (~150 KB, ~1 ms of Redis time: other clients wait no longer than a batch of
// applies makes them wait). A cursor's pages start at what its query needs and double up to it.
const MAX_PAGE = 1000;
// A scope filter may skip most of an owner's entries (a player plays in a handful of rooms at a
// time): its first page reads at least 4, so `limit: 1` does not cost a round trip per entry.
const MIN_FILTERED_PAGE = 4;
// An `after` query without `limit` reads 64 entries first, with the newest entry in the same round
// trip: enough to find `after` in a journal paged a page or two ago, and small enough not to read
// ahead much when `after` lies far back (the search below takes over).
const AFTER_FIRST_PAGE = 64;
// Past 256 entries possibly at or below `after`, they are skipped by a search instead of read:
// 256 entries cost about what two or three search rounds cost (one round trip each).
const SEEK_SKIP = 256;
// Ids probed per round trip of that search (pipelined: 15 probes of COUNT 1 cost about one round
// trip): each round narrows the range 16 times, so a million entries take 4-5 rounds.
const SEEK_FANOUT = 16n;
// The largest stream id part (ms or sequence) Redis allows: an unsigned 64-bit integer.
const MAX_U64 = 2n ** 64n - 1n;

/** The entries of `ledger`'s journal that `query` asks for, oldest first (see the top of this file). */
export async function readJournal(
  client: RedisLike,
  prefix: string,
  ledger: string,
  query: JournalQuery,
): Promise<JournalEntry[]> {
  const { owner, scope, after, limit } = query;
  if (limit === 0) return [];
  const owners =
    owner !== undefined
      ? [owner]
      : ((await client.call(
          'SMEMBERS',
          scope !== undefined ? scopeOwnersKey(prefix, ledger, scope) : ledgerOwnersKey(prefix, ledger),
        )) as string[]);
  const cursor = (o: string, count: number | undefined) =>
    new JournalCursor(client, ownerKeys(prefix, ledger, o)[1], o, scope, after, count);
  const firstPage = (n: number) =>
    Math.min(MAX_PAGE, Math.max(n, scope === undefined ? 1 : MIN_FILTERED_PAGE));
  const out: JournalEntry[] = [];

  if (owners.length === 1) {
    // One owner's journal stays in seq order (XRANGE's): a server clock stepping back must not
    // reorder it, or paging by `after` would skip entries.
    const one = cursor(owners[0] as string, limit === undefined ? undefined : firstPage(limit));
    while (limit === undefined || out.length < limit) {
      if (!one.ready()) await one.fill(limit === undefined ? MAX_PAGE : limit - out.length);
      const e = one.shift();
      if (e === undefined) break;
      out.push(publicEntry(e));
    }
    return out;
  }
  // Across owners, entries are ordered by server time (microseconds), then owner and seq. Without
  // a limit every stream is read whole anyway.
  if (limit === undefined || owners.length === 0) return readAllSorted(client, prefix, ledger, owners, query);

  // k-way merge: a heap of the cursors by their oldest unread matching entry. It gives the sorted
  // order as long as each owner's stamps grow along its stream, which they do unless the server
  // clock stepped back; a cursor that reads such a step makes the query fall back to the sort.
  const cursors = owners.map((o) => cursor(o, firstPage(Math.ceil((2 * limit) / owners.length))));
  await Promise.all(cursors.map((c) => c.fill(limit)));
  if (cursors.some((c) => c.outOfOrder)) return readAllSorted(client, prefix, ledger, owners, query);
  const heap = cursors.filter((c) => c.ready());
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
  while (heap.length > 0) {
    const top = heap[0] as JournalCursor;
    out.push(publicEntry(top.shift() as ReadEntry));
    if (out.length >= limit) break;
    if (!top.ready()) {
      await top.fill(limit - out.length);
      if (top.outOfOrder) return readAllSorted(client, prefix, ledger, owners, query);
      if (!top.ready()) {
        const last = heap.pop() as JournalCursor;
        if (heap.length === 0) break;
        heap[0] = last;
      }
    }
    siftDown(heap, 0);
  }
  return out;
}

/** Every owner's whole stream, sorted and filtered (the merge's fallback, and queries without a limit). */
async function readAllSorted(
  client: RedisLike,
  prefix: string,
  ledger: string,
  owners: readonly string[],
  query: JournalQuery,
): Promise<JournalEntry[]> {
  const perOwner = await Promise.all(
    owners.map(async (o) => {
      const raw = (await client.call('XRANGE', ownerKeys(prefix, ledger, o)[1], '-', '+')) as StreamEntry[];
      return raw.map(([, fields]) => parseEntry(o, fields));
    }),
  );
  const all = perOwner.flat();
  if (perOwner.length > 1) all.sort(compareEntries);
  const out: JournalEntry[] = [];
  for (const e of all) {
    if (query.scope !== undefined && e.scope !== query.scope) continue;
    if (query.after !== undefined && e.seq <= query.after) continue;
    if (query.limit !== undefined && out.length >= query.limit) break;
    out.push(publicEntry(e));
  }
  return out;
}

/** The order across owners: server time (microseconds), then owner, then seq. */
function compareEntries(a: ReadEntry, b: ReadEntry): number {
  return a.us !== b.us
    ? a.us < b.us
      ? -1
      : 1
    : a.owner !== b.owner
      ? a.owner < b.owner
        ? -1
        : 1
      : a.seq - b.seq;
}

/** Restores the heap (cursors by their next entry, oldest on top) below `at`. */
function siftDown(heap: JournalCursor[], at: number): void {
  const before = (x: JournalCursor, y: JournalCursor) =>
    compareEntries(x.head() as ReadEntry, y.head() as ReadEntry) < 0;
  const item = heap[at] as JournalCursor;
  let i = at;
  for (;;) {
    let child = 2 * i + 1;
    if (child >= heap.length) break;
    if (child + 1 < heap.length && before(heap[child + 1] as JournalCursor, heap[child] as JournalCursor))
      child++;
    const next = heap[child] as JournalCursor;
    if (!before(next, item)) break;
    heap[i] = next;
    i = child;
  }
  heap[i] = item;
}

/**
 * Reads one owner's journal stream forward, in XRANGE pages, keeping the entries that match the
 * query's scope and `after`. `count` is the first page's size (later pages double, up to
 * MAX_PAGE); undefined means no limit: the stream is read to its end in one XRANGE.
 */
class JournalCursor {
  /** Set when two matching entries read are out of time order (the server clock stepped back). */
  outOfOrder = false;
  private readonly client: RedisLike;
  private readonly key: string;
  private readonly owner: string;
  private readonly scope: string | undefined;
  private readonly after: number | undefined;
  private count: number | undefined;
  private buffer: ReadEntry[] = [];
  private index = 0;
  /** Where the next page starts; undefined once the stream is read to its end. */
  private start: string | undefined = '-';
  private sought = false;
  /** The last entry read, matching or not. */
  private last: { id: string; seq: number } | undefined;
  private lastUs: bigint | undefined;

  constructor(
    client: RedisLike,
    key: string,
    owner: string,
    scope: string | undefined,
    after: number | undefined,
    count: number | undefined,
  ) {
    this.client = client;
    this.key = key;
    this.owner = owner;
    this.scope = scope;
    this.after = after;
    this.count = count;
  }

  /** Whether a matching entry is in hand (no read needed to see the next one). */
  ready(): boolean {
    return this.index < this.buffer.length;
  }

  head(): ReadEntry | undefined {
    return this.buffer[this.index];
  }

  shift(): ReadEntry | undefined {
    return this.index < this.buffer.length ? this.buffer[this.index++] : undefined;
  }

  /** Reads pages until a matching entry is in hand or the stream ends; `want`: matches still needed. */
  async fill(want: number): Promise<void> {
    while (!this.ready() && this.start !== undefined) {
      this.buffer = [];
      this.index = 0;
      if (this.after !== undefined && !this.sought) {
        this.sought = true;
        await this.firstAfterPage(this.after, want);
      } else {
        const count = this.count;
        await this.page(this.start, count);
        if (count !== undefined) this.count = Math.min(MAX_PAGE, count * 2);
      }
    }
  }

  private async page(start: string, count: number | undefined): Promise<void> {
    const raw = (await (count === undefined
      ? this.client.call('XRANGE', this.key, start, '+')
      : this.client.call('XRANGE', this.key, start, '+', 'COUNT', count))) as StreamEntry[];
    this.read(raw, count);
  }

  private read(raw: StreamEntry[], count: number | undefined): void {
    for (const [id, fields] of raw) {
      const e = parseEntry(this.owner, fields);
      this.last = { id, seq: e.seq };
      if (this.scope !== undefined && e.scope !== this.scope) continue;
      if (this.after !== undefined && e.seq <= this.after) continue;
      if (this.lastUs !== undefined && e.us < this.lastUs) this.outOfOrder = true;
      this.lastUs = e.us;
      this.buffer.push(e);
    }
    const end = raw[raw.length - 1];
    // A page shorter than asked is the stream's end (entries appended since are not this read's).
    this.start = count === undefined || raw.length < count || end === undefined ? undefined : nextId(end[0]);
  }

  /**
   * The first page of an `after` query, with the stream's newest entry in the same round trip.
   * When the page holds nothing above `after` and more entries follow: nothing matches if the
   * newest entry is at or below `after`; else the entries between are skipped, by a search when
   * more than SEEK_SKIP of them may lie there.
   */
  private async firstAfterPage(after: number, want: number): Promise<void> {
    const count = this.count ?? AFTER_FIRST_PAGE;
    const [raw, tail] = (await Promise.all([
      this.client.call('XRANGE', this.key, '-', '+', 'COUNT', count),
      this.client.call('XREVRANGE', this.key, '+', '-', 'COUNT', 1),
    ])) as [StreamEntry[], StreamEntry[]];
    this.read(raw, count);
    if (this.start === undefined || this.last === undefined || this.last.seq > after) {
      // The stream's end, or past `after` (entries out of the scope need not match).
      if (this.count !== undefined) this.count = Math.min(MAX_PAGE, count * 2);
      return;
    }
    // Every entry read is at or below `after`, and more follow.
    const newest = tail[0];
    if (newest === undefined || seqOf(newest[1]) <= after) {
      this.start = undefined;
      return;
    }
    let lo = this.last;
    if (after - lo.seq > SEEK_SKIP) lo = await this.seek(lo, newest, after);
    this.start = nextId(lo.id);
    // lo.seq <= after and seq grows by at least 1 per entry: at most after - lo.seq entries lie
    // between lo and the first entry above `after`, so one page holds them and the `want` after.
    if (this.count !== undefined) this.count = Math.min(MAX_PAGE, after - lo.seq + want);
  }

  /**
   * An entry at or below `after`, close before the first entry above it: a search over the
   * millisecond part of the stream ids between `lo` (at or below) and `newest` (above), probing
   * SEEK_FANOUT - 1 ids per round trip with `XRANGE <ms>-0 + COUNT 1`. Ids only order the
   * probes: whatever they are, the entry returned is at or below `after`, and reading on from it
   * is exact. Stops once at most SEEK_SKIP entries can lie between.
   */
  private async seek(
    from: { id: string; seq: number },
    newest: StreamEntry,
    after: number,
  ): Promise<{ id: string; seq: number }> {
    let lo = from;
    let loMs = idMs(lo.id);
    // Probes run strictly between loMs and hiMs; a probe that finds an entry above `after`
    // becomes the new hiMs.
    let hiMs = idMs(newest[0]) + 1n;
    while (after - lo.seq > SEEK_SKIP && hiMs - loMs > 1n) {
      const probes: bigint[] = [];
      for (let i = 1n; i < SEEK_FANOUT; i++) {
        const p = loMs + ((hiMs - loMs) * i) / SEEK_FANOUT;
        if (p > loMs && p < hiMs && p !== probes[probes.length - 1]) probes.push(p);
      }
      const found = (await Promise.all(
        probes.map((p) => this.client.call('XRANGE', this.key, `${p}-0`, '+', 'COUNT', 1)),
      )) as StreamEntry[][];
      let i = 0;
      for (; i < probes.length; i++) {
        const e = found[i]?.[0];
        if (e === undefined) break;
        const seq = seqOf(e[1]);
        if (seq > after) break;
        lo = { id: e[0], seq };
      }
      if (i < probes.length) hiMs = probes[i] as bigint;
      loMs = idMs(lo.id);
    }
    return lo;
  }
}

/** The entry without its read-only time stamp, fields in the order parseEntry gave them. */
function publicEntry(entry: ReadEntry): JournalEntry {
  const { us: _us, ...e } = entry;
  return e;
}

function seqOf(fields: string[]): number {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === 'seq') return Number(fields[i + 1]);
  return Number.NaN;
}

function idMs(id: string): bigint {
  return BigInt(id.slice(0, id.indexOf('-')));
}

/** The smallest stream id above `id` (XRANGE's exclusive `(` start needs Redis 6.2). */
function nextId(id: string): string | undefined {
  const dash = id.indexOf('-');
  const ms = BigInt(id.slice(0, dash));
  const seq = BigInt(id.slice(dash + 1));
  if (seq < MAX_U64) return `${ms}-${seq + 1n}`;
  return ms < MAX_U64 ? `${ms + 1n}-0` : undefined;
}
