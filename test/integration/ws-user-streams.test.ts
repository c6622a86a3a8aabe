// The per-user server-to-client stream (src/ws/user-streams*.ts) on Redis, standalone and the
// 3-master cluster: random publish/read/ack/clock sequences (publishes with repeated ids too) against
// the memory store as the model, resume across two clients ("nodes"), a retried publish, a lost
// stream, retention, and bad input.
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { ReadResult, StreamPosition, UserStreams } from '../../src/ws/user-streams.js';
import { createMemoryUserStreams } from '../../src/ws/user-streams-memory.js';
import { createRedisUserStreams, userStreamKeys } from '../../src/ws/user-streams-redis.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

const USERS = ['u1', 'u:2{x}%'] as const;
const SESSIONS = ['session-aaaaaaaaaaaa', 'session-bbbbbbbbbbbb'] as const;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Cmd =
  | { op: 'publish'; user: number; n: number; id: string | undefined }
  | { op: 'read'; user: number; from: 'none' | 'end' | 'bogus' | number | 'stale'; limit: number }
  | { op: 'advance'; ms: number }
  | { op: 'ack'; session: number; user: number; offset: number; stale: boolean }
  | { op: 'position'; session: number };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('publish' as const),
      user: fc.nat(1),
      n: fc.nat(1000),
      // Few ids, so they repeat within and past a small dedup window.
      id: fc.option(fc.constantFrom('k1', 'k2', 'k3', 'order-9:a.b_c'), { nil: undefined }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('read' as const),
      user: fc.nat(1),
      from: fc.oneof(
        fc.constantFrom('none' as const, 'end' as const, 'bogus' as const, 'stale' as const),
        fc.integer({ min: 0, max: 7 }),
      ),
      limit: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      // The edges of maxAgeMs (10 s) and of the idle and session ttl (60 s) exactly, and between.
      ms: fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(1, 5_000, 9_999, 10_000, 30_000, 59_999, 60_000) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 40_000 }) },
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('ack' as const),
      session: fc.nat(1),
      user: fc.nat(1),
      offset: fc.nat(8),
      stale: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('position' as const), session: fc.nat(1) }) },
);

/** One store under test with its epochs named by first appearance, so two stores compare. */
class Side {
  readonly epochs: string[] = [];
  /** Per user, the epochs it has had (the last is current). */
  readonly history = new Map<string, string[]>();
  constructor(readonly store: UserStreams) {}
  name(epoch: string): string {
    let i = this.epochs.indexOf(epoch);
    if (i < 0) i = this.epochs.push(epoch) - 1;
    return `E${i}`;
  }
  see(user: string, epoch: string): void {
    const h = this.history.get(user) ?? [];
    if (h.at(-1) !== epoch) h.push(epoch);
    this.history.set(user, h);
  }
  epochFor(user: string, which: 'end' | 'stale' | 'bogus'): string {
    const h = this.history.get(user) ?? [];
    if (which === 'bogus') return 'bogus';
    return (which === 'stale' ? h.at(-2) : h.at(-1)) ?? 'bogus';
  }
}

async function step(side: Side, c: Cmd, ends: Map<string, number>): Promise<unknown> {
  if (c.op === 'advance') return null;
  if (c.op === 'publish') {
    const user = USERS[c.user] as string;
    const r = await side.store.publish(
      user,
      'ev',
      { n: c.n, s: 'é' },
      c.id === undefined ? undefined : { id: c.id },
    );
    side.see(user, r.epoch);
    return { epoch: side.name(r.epoch), offset: r.offset };
  }
  if (c.op === 'read') {
    const user = USERS[c.user] as string;
    let from: StreamPosition | undefined;
    if (c.from === 'none') from = undefined;
    // A number k reads from k - 2 before the last end seen: past it (k < 2), at it, or behind it.
    else if (typeof c.from === 'number')
      from = { offset: Math.max(0, (ends.get(user) ?? 0) + 2 - c.from), epoch: side.epochFor(user, 'end') };
    else from = { offset: ends.get(user) ?? 0, epoch: side.epochFor(user, c.from) };
    const r: ReadResult = await side.store.read(user, from, c.limit);
    side.see(user, r.epoch);
    return { ...r, epoch: side.name(r.epoch) };
  }
  if (c.op === 'ack') {
    const user = USERS[c.user] as string;
    const epoch = side.epochFor(user, c.stale ? 'stale' : 'end');
    const r = await side.store.ackPosition(SESSIONS[c.session] as string, user, { offset: c.offset, epoch });
    return { ...r, epoch: epoch === 'bogus' ? 'bogus' : side.name(r.epoch) };
  }
  const r = await side.store.position(SESSIONS[c.session] as string);
  return r === undefined ? r : { ...r, epoch: r.epoch === 'bogus' ? 'bogus' : side.name(r.epoch) };
}

for (const mode of ['standalone', 'cluster'] as const) {
  describe(`user streams on Redis (${mode})`, () => {
    const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    const prefix = runPrefix(`ws-user-streams-${mode}`);
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });
    let run = 0;

    it('answers exactly as the memory model over random publish/read/ack/clock sequences', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(cmd, { minLength: 1, maxLength: 40 }),
          fc.integer({ min: 1, max: 5 }),
          fc.constantFrom(0, 10_000),
          fc.integer({ min: 1, max: 3 }),
          async (cmds, maxLength, maxAgeMs, publishDedup) => {
            let t = 1_700_000_000_000;
            const now = () => t;
            // sessionTtlMs (and so the keys' real expiry) far beyond a run's real time: only the
            // fake clock ages the data, on both sides alike.
            const options = { maxLength, maxAgeMs, sessionTtlMs: 60_000, publishDedup, now };
            const model = new Side(createMemoryUserStreams(options));
            const redis = new Side(
              createRedisUserStreams({ ...options, client, prefix: `${prefix}${run++}:` }),
            );
            const ends = new Map<string, number>();
            for (const c of cmds) {
              if (c.op === 'advance') t += c.ms;
              const want = await step(model, c, ends);
              const got = await step(redis, c, ends);
              expect(got, JSON.stringify(c)).toEqual(want);
              if (c.op === 'read' || c.op === 'publish') {
                const w = want as { offset?: number; end?: number };
                ends.set(USERS[c.user] as string, w.end ?? w.offset ?? 0);
              }
            }
          },
        ),
        { numRuns: mode === 'cluster' ? 50 : 300 },
      );
    });

    it('resume on another node: every message after the offset, once, in order; the acked position too', async () => {
      const other = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
      try {
        const p = `${prefix}resume:`;
        const a = createRedisUserStreams({ client, prefix: p });
        const b = createRedisUserStreams({ client: other, prefix: p });
        let epoch = '';
        for (let n = 1; n <= 25; n++) {
          const r = await a.publish('alice', 'chat.msg', { n });
          expect(r.offset).toBe(n);
          epoch = r.epoch;
        }
        await a.ackPosition(SESSIONS[0], 'alice', { offset: 7, epoch });
        const at = await b.position(SESSIONS[0]);
        expect(at).toEqual({ user: 'alice', offset: 7, epoch });
        const seen: number[] = [];
        let from: StreamPosition = { offset: 7, epoch };
        for (;;) {
          const page = await b.read('alice', from, 4);
          expect(page).toMatchObject({ epoch, end: 25, recovered: true });
          if (page.messages.length === 0) break;
          seen.push(...page.messages.map((m) => (m.body as { n: number }).n));
          from = { offset: page.messages.at(-1)?.offset ?? 0, epoch };
        }
        expect(seen).toEqual(Array.from({ length: 18 }, (_, i) => i + 8));
      } finally {
        other.disconnect();
      }
    });

    it('a publish retried with its id, on the same node or another, concurrently too: one message', async () => {
      const other = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
      try {
        const p = `${prefix}retry:`;
        const a = createRedisUserStreams({ client, prefix: p });
        const b = createRedisUserStreams({ client: other, prefix: p });
        const first = await a.publish('ivan', 'order.shipped', { n: 1 }, { id: 'order-881:shipped' });
        // The reply was lost: the caller retries, here and through another node.
        expect(await a.publish('ivan', 'order.shipped', { n: 1 }, { id: 'order-881:shipped' })).toEqual(
          first,
        );
        expect(await b.publish('ivan', 'order.shipped', { n: 1 }, { id: 'order-881:shipped' })).toEqual(
          first,
        );
        const racing = await Promise.all(
          [a, b, a, b].map((s) => s.publish('ivan', 'order.paid', { n: 2 }, { id: 'order-881:paid' })),
        );
        for (const r of racing) expect(r).toEqual({ epoch: first.epoch, offset: 2 });
        const r = await b.read('ivan', { offset: 0, epoch: first.epoch }, 10);
        expect(r.messages.map((m) => m.body)).toEqual([{ n: 1 }, { n: 2 }]);
        // The window is bounded: the ids key holds at most publishDedup ids.
        const small = createRedisUserStreams({ client, prefix: `${p}small:`, publishDedup: 3 });
        for (let i = 0; i < 10; i++) await small.publish('ivan', 't', i, { id: `id-${i}` });
        expect(await client.zcard(userStreamKeys(`${p}small:`, 'ivan')[2])).toBe(3);
        expect((await small.publish('ivan', 't', 0, { id: 'id-0' })).offset).toBe(11);
        expect((await small.publish('ivan', 't', 9, { id: 'id-9' })).offset).toBe(10);
      } finally {
        other.disconnect();
      }
    });

    it('a session position on an injected clock: kept until sessionTtlMs, then gone and replaced', async () => {
      let t = 1_700_000_000_000;
      const s = createRedisUserStreams({
        client,
        prefix: `${prefix}ttl:`,
        sessionTtlMs: 60_000,
        now: () => t,
      });
      const session = SESSIONS[1];
      await s.ackPosition(session, 'frank', { offset: 5, epoch: 'e1' });
      t += 59_999;
      expect(await s.ackPosition(session, 'frank', { offset: 3, epoch: 'e1' })).toMatchObject({ offset: 5 });
      t += 59_999;
      expect(await s.position(session)).toEqual({ user: 'frank', offset: 5, epoch: 'e1' });
      t += 1;
      expect(await s.position(session)).toBeUndefined();
      expect(await s.ackPosition(session, 'frank', { offset: 3, epoch: 'e1' })).toMatchObject({ offset: 3 });
      // Another user's position replaces the session's, whatever its offset.
      expect(await s.ackPosition(session, 'gina', { offset: 1, epoch: 'e1' })).toMatchObject({
        user: 'gina',
        offset: 1,
      });
      // The largest offset is kept exactly.
      const max = Number.MAX_SAFE_INTEGER;
      expect(await s.ackPosition(session, 'gina', { offset: max, epoch: 'e1' })).toMatchObject({
        offset: max,
      });
      expect(await s.ackPosition(session, 'gina', { offset: max - 1, epoch: 'e1' })).toMatchObject({
        offset: max,
      });
      expect(await s.position(session)).toEqual({ user: 'gina', offset: max, epoch: 'e1' });
    });

    it('a lost stream (its keys deleted) gets a new epoch and recovered: false', async () => {
      const p = `${prefix}lost:`;
      const s = createRedisUserStreams({ client, prefix: p });
      const { epoch } = await s.publish('bob', 't', 1, { id: 'once' });
      for (const key of userStreamKeys(p, 'bob')) await client.del(key);
      const r = await s.read('bob', { offset: 1, epoch }, 10);
      expect(r.epoch).not.toBe(epoch);
      expect(r).toMatchObject({ end: 0, recovered: false, messages: [] });
      expect(await s.publish('bob', 't', 2)).toEqual({ epoch: r.epoch, offset: 1 });
      // The id went with the old epoch: publishing it again appends.
      expect(await s.publish('bob', 't', 1, { id: 'once' })).toEqual({ epoch: r.epoch, offset: 2 });
    });

    it('only the meta lost (its ids left behind): the new epoch drops the old ids', async () => {
      const p = `${prefix}lost-meta:`;
      const s = createRedisUserStreams({ client, prefix: p });
      const { epoch } = await s.publish('bea', 't', 1, { id: 'once' });
      await s.publish('bea', 't', 2, { id: 'twice' });
      await client.del(userStreamKeys(p, 'bea')[0]);
      const again = await s.publish('bea', 't', 2, { id: 'twice' });
      expect(again.epoch).not.toBe(epoch);
      expect(again.offset).toBe(1);
      expect((await s.publish('bea', 't', 1, { id: 'once' })).offset).toBe(2);
    });

    it('offsets past 1e14 stay exact integers (stream ids and reads)', async () => {
      const p = `${prefix}big:`;
      const s = createRedisUserStreams({ client, prefix: p });
      const { epoch } = await s.publish('hank', 't', 0);
      await client.hset(userStreamKeys(p, 'hank')[0], 'n', String(2 ** 53 - 3));
      expect(await s.publish('hank', 't', 1)).toEqual({ epoch, offset: 2 ** 53 - 2 });
      expect(await s.publish('hank', 't', 2)).toEqual({ epoch, offset: 2 ** 53 - 1 });
      const r = await s.read('hank', { offset: 2 ** 53 - 3, epoch }, 10);
      expect(r).toMatchObject({ end: 2 ** 53 - 1, recovered: true });
      expect(r.messages.map((m) => m.offset)).toEqual([2 ** 53 - 2, 2 ** 53 - 1]);
      const page = await s.read('hank', { offset: 2 ** 53 - 2, epoch }, 10);
      expect(page.messages).toEqual([{ offset: 2 ** 53 - 1, type: 't', body: 2 }]);
    });

    it('retention dropping the message after the offset: recovered: false, no message of the range', async () => {
      const s = createRedisUserStreams({ client, prefix: `${prefix}trim:`, maxLength: 3 });
      const { epoch } = await s.publish('carol', 't', 1);
      for (let n = 2; n <= 6; n++) await s.publish('carol', 't', n);
      expect(await s.read('carol', { offset: 2, epoch }, 10)).toEqual({
        epoch,
        end: 6,
        recovered: false,
        messages: [],
      });
      const r = await s.read('carol', { offset: 3, epoch }, 10);
      expect(r.messages.map((m) => m.offset)).toEqual([4, 5, 6]);
    });

    it("maxAgeMs on the server's clock: a message older than it is gone", async () => {
      const s = createRedisUserStreams({ client, prefix: `${prefix}age:`, maxAgeMs: 200 });
      const { epoch } = await s.publish('dave', 't', 1);
      const since = Date.now();
      await sleep(250);
      // Only a lower bound holds on a busy machine: at least 200 ms have passed, so it is gone.
      expect(Date.now() - since).toBeGreaterThanOrEqual(200);
      expect(await s.read('dave', { offset: 0, epoch }, 10)).toEqual({
        epoch,
        end: 1,
        recovered: false,
        messages: [],
      });
      expect((await s.read('dave', { offset: 1, epoch }, 10)).recovered).toBe(true);
    });

    it('maxAgeMs dropping more old messages than one page of the trim (64), as the memory model', async () => {
      let t = 1_700_000_000_000;
      const now = () => t;
      const options = { maxLength: 1000, maxAgeMs: 10_000, now };
      const model = createMemoryUserStreams(options);
      const s = createRedisUserStreams({ client, prefix: `${prefix}age-pages:`, ...options });
      const both = async <R>(f: (x: UserStreams) => Promise<R>) => [await f(s), await f(model)] as const;
      // 150 old messages (over two pages), then 3 young ones; the old ones age out together.
      const [first, firstModel] = await both((x) => x.publish('gil', 't', 0));
      for (let n = 1; n < 150; n++) await both((x) => x.publish('gil', 't', n));
      t += 5_000;
      for (let n = 150; n < 153; n++) await both((x) => x.publish('gil', 't', n));
      t += 5_000;
      const epoch = first.epoch;
      const from = (offset: number) => async (x: UserStreams) =>
        x.read('gil', { offset, epoch: x === s ? epoch : firstModel.epoch }, 10);
      const [lost, lostModel] = await both(from(149));
      expect(lost).toEqual({ epoch, end: 153, recovered: false, messages: [] });
      expect(lostModel).toMatchObject({ end: 153, recovered: false, messages: [] });
      const [kept, keptModel] = await both(from(150));
      expect(kept.messages.map((m) => m.offset)).toEqual([151, 152, 153]);
      expect(keptModel.messages.map((m) => m.offset)).toEqual([151, 152, 153]);
      expect(await client.xlen(userStreamKeys(`${prefix}age-pages:`, 'gil')[1])).toBe(3);
      // At the end: recovered, no message.
      expect(await s.read('gil', { offset: 153, epoch }, 10)).toEqual({
        epoch,
        end: 153,
        recovered: true,
        messages: [],
      });
    });

    it('bad input: typed errors, no key written', async () => {
      const p = `${prefix}bad:`;
      expect(() => createRedisUserStreams({ client, prefx: 'x' } as never)).toThrow(/did you mean `prefix`/);
      expect(() => createRedisUserStreams({ client: {} as never })).toThrow(/client/);
      const s = createRedisUserStreams({ client, prefix: p, maxBodyBytes: 64 });
      await expect(s.publish('erin', 't', 'x'.repeat(100))).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
      });
      await expect(s.publish('erin', '', 1)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
      await expect(s.publish('erin', 't', 1, { id: 'a b' })).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
      });
      await expect(s.publish('', 't', 1)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
      await expect(s.read('erin', { offset: 0, epoch: 'e' }, 0)).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
      });
      await expect(s.ackPosition('bad', 'erin', { offset: 0, epoch: 'e' })).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
      });
      for (const key of userStreamKeys(p, 'erin')) expect(await client.exists(key)).toBe(0);
      expect(await s.position(SESSIONS[1])).toBeUndefined();
    });
  });
}
