// The Redis journal reads bounded pages: journal({ owner, after, limit }) and scope or whole-ledger
// queries with a limit stop once they hold `limit` entries, instead of reading every stream whole,
// and answer exactly what the whole read did (checked against a copy of it, and the memory store).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orderFromString } from '../../src/core/validate.js';
import { createLedger, type Ledger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
import { ledgerOwnersKey, ownerKeys, scopeOwnersKey } from '../../src/redis/keys.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { JournalEntry, JournalQuery } from '../../src/store/store.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

type Entry = JournalEntry & { us: bigint };

/** The journal read before paging: every owner's whole stream, sorted across owners, filtered. */
async function wholeRead(
  client: Redis,
  prefix: string,
  ledger: string,
  query: JournalQuery,
): Promise<JournalEntry[]> {
  const owners =
    query.owner !== undefined
      ? [query.owner]
      : await client.smembers(
          query.scope !== undefined
            ? scopeOwnersKey(prefix, ledger, query.scope)
            : ledgerOwnersKey(prefix, ledger),
        );
  const perOwner = await Promise.all(
    owners.map(async (owner) => {
      const raw = (await client.call('XRANGE', ownerKeys(prefix, ledger, owner)[1], '-', '+')) as [
        string,
        string[],
      ][];
      return raw.map(([, fields]) => parse(owner, fields));
    }),
  );
  const all = perOwner.flat();
  if (perOwner.length > 1)
    all.sort((a, b) =>
      a.us !== b.us
        ? a.us < b.us
          ? -1
          : 1
        : a.owner !== b.owner
          ? a.owner < b.owner
            ? -1
            : 1
          : a.seq - b.seq,
    );
  const out: JournalEntry[] = [];
  for (const { us: _us, ...e } of all) {
    if (query.scope !== undefined && e.scope !== query.scope) continue;
    if (query.after !== undefined && e.seq <= query.after) continue;
    if (query.limit !== undefined && out.length >= query.limit) break;
    out.push(e);
  }
  return out;
}

function parse(owner: string, fields: string[]): Entry {
  const map = new Map<string, string>();
  for (let i = 0; i < fields.length; i += 2) map.set(fields[i] as string, fields[i + 1] as string);
  const deltas = Object.fromEntries(
    [...map].filter(([k]) => k.startsWith('d:')).map(([k, v]) => [k.slice(2), BigInt(v)]),
  );
  const seconds = BigInt(map.get('s') ?? '0');
  const micros = BigInt(map.get('us') ?? '0');
  const entry: Record<string, unknown> = {
    seq: Number(map.get('seq')),
    owner,
    signature: map.get('sig') ?? '',
    deltas,
    at: Number(seconds * 1000n + micros / 1000n),
    us: seconds * 1_000_000n + micros,
  };
  if (map.has('scope')) entry['scope'] = map.get('scope');
  if (map.has('order')) entry['order'] = orderFromString(map.get('order') as string);
  if (map.has('meta')) entry['meta'] = JSON.parse(map.get('meta') as string);
  return entry as unknown as Entry;
}

/** Journal entries without their store time (the memory store has its own clock). */
const untimed = (entries: JournalEntry[]) => entries.map(({ at: _at, ...e }) => e);

describe('Redis journal: bounded pages, same answers', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('journal-paging');
  // Every stream read the store makes: XRANGE / XREVRANGE calls, entries returned, reads without COUNT.
  const reads = { calls: 0, fetched: 0, unbounded: 0 };
  const counting = {
    async call(command: string, ...args: (string | number)[]) {
      const reply = await client.call(command, ...args);
      if (command === 'XRANGE' || command === 'XREVRANGE') {
        reads.calls++;
        reads.fetched += (reply as unknown[]).length;
        if (!args.includes('COUNT')) reads.unbounded++;
      }
      return reply;
    },
  };
  const measure = async (query: JournalQuery, ledger: Ledger) => {
    Object.assign(reads, { calls: 0, fetched: 0, unbounded: 0 });
    const entries = await ledger.journal(query);
    return { entries, ...reads };
  };
  const name = 'jp';
  const redis = createLedger({ store: createRedisStore({ client: counting, prefix }), capacity: 4, name });
  const memory = createLedger({
    store: memoryStore({ journal: { maxEntries: Number.POSITIVE_INFINITY } }),
    capacity: 4,
    name,
  });
  const small = Array.from({ length: 8 }, (_, i) => `p${i}`);
  const owners = ['big', 'sparse', ...small];
  const sizes: Record<string, number> = { big: 1500, sparse: 600 };
  for (const p of small) sizes[p] = 100;

  beforeAll(async () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) as number;
    const scopes = ['A', 'B', 'C', undefined];
    for (let round = 0; round < 1500; round++) {
      // One call per owner per round, all in one turn: one batch on Redis, stamped in call order.
      const calls = [];
      for (const owner of owners) {
        if (round >= (sizes[owner] as number)) continue;
        const scope =
          owner === 'big'
            ? scopes[round % 3]
            : owner === 'sparse'
              ? round >= 597
                ? 'C'
                : 'B'
              : scopes[Math.floor(random() * 4)];
        const entry = {
          owner,
          signature: `${owner}-${round}`,
          deltas: round % 5 === 0 ? { coins: round, gems: -1 } : { coins: 1 },
          ...(scope === undefined ? {} : { scope }),
          ...(round % 7 === 0 ? { meta: { round, tag: owner } } : {}),
          ...(round % 11 === 0 ? { order: round } : {}),
        };
        calls.push(entry);
      }
      for (const entry of calls) await memory.apply(entry);
      await Promise.all(calls.map((entry) => redis.apply(entry)));
    }
  });

  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  const limits = [undefined, 0, 1, 2, 7, 100, 999, 5000];
  const queries: JournalQuery[] = [];
  for (const limit of limits) {
    queries.push({ limit });
    for (const scope of ['A', 'B', 'C', 'nowhere']) queries.push({ scope, limit });
    for (const owner of [...owners, 'nobody']) {
      queries.push({ owner, limit }, { owner, scope: 'C', limit });
      for (const after of [0, 1, 3, 10, 50, 99, 100, 300, 596, 599, 1000, 1234, 1499, 1500, 9999])
        queries.push({ owner, after, limit }, { owner, scope: 'A', after, limit });
    }
  }

  it(`answers ${queries.length} queries exactly as the whole-stream read and the memory store do`, async () => {
    let nonEmpty = 0;
    for (const query of queries) {
      const [paged, whole, model] = await Promise.all([
        redis.journal(query),
        wholeRead(client, prefix, name, query),
        memory.journal(query),
      ]);
      expect(paged, JSON.stringify(query)).toEqual(whole);
      expect(untimed(paged), JSON.stringify(query)).toEqual(untimed(model));
      if (paged.length > 0) nonEmpty++;
    }
    expect(nonEmpty).toBeGreaterThan(queries.length / 4);
    expect((await redis.journal({})).length).toBe(1500 + 600 + 800);
  });

  it('journal({ owner, limit: 1 }) reads one entry, not the stream', async () => {
    const r = await measure({ owner: 'big', limit: 1 }, redis);
    expect(r.entries.map((e) => e.signature)).toEqual(['big-0']);
    expect(r).toMatchObject({ calls: 1, fetched: 1, unbounded: 0 });
  });

  it('journal({ owner, after, limit }) skips the entries at or below `after` without reading them', async () => {
    for (const after of [1000, 1400, 1490]) {
      const r = await measure({ owner: 'big', after, limit: 10 }, redis);
      expect(r.entries.map((e) => e.seq)).toEqual(Array.from({ length: 10 }, (_, i) => after + 1 + i));
      expect(r.unbounded).toBe(0);
      // The first page, the newest entry, a few rounds of 15 probes and one page from the entry
      // found (at most 256 entries before the first above `after`, then the 10 wanted).
      expect(r.fetched).toBeLessThan(400);
    }
    // Polling past the end: the newest entry says there is nothing, in one round trip.
    const none = await measure({ owner: 'big', after: 1500, limit: 100 }, redis);
    expect(none.entries).toEqual([]);
    expect(none).toMatchObject({ calls: 2, unbounded: 0 });
    expect(none.fetched).toBeLessThanOrEqual(101);
  });

  it('journal({ scope, limit: 1 }) and journal({ limit: 1 }) read a page or two per owner', async () => {
    const inA = (await client.smembers(scopeOwnersKey(prefix, name, 'A'))).length;
    expect(inA).toBeGreaterThan(2);
    const scoped = await measure({ scope: 'A', limit: 1 }, redis);
    expect(scoped.entries).toEqual(await wholeRead(client, prefix, name, { scope: 'A', limit: 1 }));
    expect(scoped.entries).toHaveLength(1);
    expect(scoped.unbounded).toBe(0);
    // The first page of a filtered cursor is 4 entries, the second twice that: 2 pages at most here.
    expect(scoped.fetched).toBeLessThanOrEqual(inA * 12);

    const all = await measure({ limit: 1 }, redis);
    expect(all.entries.map((e) => e.signature)).toEqual(['big-0']);
    expect(all.unbounded).toBe(0);
    expect(all.fetched).toBeLessThanOrEqual(owners.length * 2);

    const hundred = await measure({ scope: 'B', limit: 100 }, redis);
    expect(hundred.entries).toEqual(await wholeRead(client, prefix, name, { scope: 'B', limit: 100 }));
    expect(hundred.unbounded).toBe(0);
    expect(hundred.fetched).toBeLessThan(1000);
  });

  it('a server clock stepping back: the sorted order wherever the step is read, else each owner in seq order', async () => {
    // Streams written as ledger-apply.lua writes them: x's stamps step back 5 s at seq 400 (past
    // the first pages), y's ids share one millisecond, then lie far apart, then end a millisecond.
    const raw = 'raw';
    const xadd = async (owner: string, id: string, seq: number, us: number, scope: string) => {
      await client.call(
        'XADD',
        ownerKeys(prefix, raw, owner)[1],
        id,
        'seq',
        seq,
        'sig',
        `${owner}${seq}`,
        's',
        Math.floor(us / 1e6),
        'us',
        us % 1e6,
        'scope',
        scope,
        'd:coins',
        1,
      );
      await client.sadd(ledgerOwnersKey(prefix, raw), owner);
      await client.sadd(scopeOwnersKey(prefix, raw, scope), owner);
    };
    for (let seq = 1; seq <= 600; seq++)
      await xadd('x', `${1000 + seq}-0`, seq, 1_000_000_000 + seq * 1000 - (seq >= 400 ? 5_000_000 : 0), 'S');
    let n = 0;
    for (let seq = 1; seq <= 600; seq++) {
      const ms = seq <= 300 ? 5 : seq <= 500 ? 2 ** 40 + seq * 2 ** 20 : 2 ** 41;
      const id = seq === 501 ? `${2 ** 41 - 1}-18446744073709551615` : `${ms}-${n++}`;
      await xadd('y', id, seq, 1_000_000_500 + seq * 1000, seq % 2 === 0 ? 'S' : 'T');
    }
    const store = createRedisStore({ client, prefix });
    for (const query of [
      {},
      { scope: 'S' },
      { limit: 450 }, // x's first page (450 entries) holds the step: the query falls back to the sort
      { limit: 900 },
      { limit: 5000 },
      { scope: 'S', limit: 600 },
      { scope: 'T', limit: 3 }, // y alone
      ...[0, 1, 299, 300, 301, 450, 500, 501, 502, 599, 600].flatMap((after) => [
        { owner: 'y', after, limit: 2 },
        { owner: 'y', after },
        { owner: 'x', after, limit: 1 },
        { owner: 'y', scope: 'S', after, limit: 3 },
      ]),
    ]) {
      expect(await store.ledgerJournal(raw, query), JSON.stringify(query)).toEqual(
        await wholeRead(client, prefix, raw, query),
      );
    }
    // The known difference: a limited query that stops before reading the step cannot see it, so
    // it gives each owner's entries in seq order; the whole read sorted x's stepped entries first.
    const signatures = (entries: JournalEntry[]) => entries.map((e) => e.signature);
    expect(signatures(await store.ledgerJournal(raw, { limit: 4 }))).toEqual(['x1', 'y1', 'x2', 'y2']);
    expect(signatures(await wholeRead(client, prefix, raw, { limit: 4 }))).toEqual([
      'x400',
      'x401',
      'x402',
      'x403',
    ]);
  });
});
