// The stream producer on the shared Redis: dedup within and after the window, bigints round-trip,
// publish order, dead letters after a terminal error, validation before any call.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { parseDeadLetter } from '../../src/streams/dead-letter.js';
import { createStreamProducer } from '../../src/streams/producer.js';
import { dedupKeys, type ProducerEvent } from '../../src/streams/producer-options.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('stream producer on Redis', () => {
  const redis = new Redis(REDIS_URL);
  const prefix = runPrefix('streams-producer');
  const streamsOf: string[] = [];
  const stream = (name: string) => {
    const s = `${prefix}{${name}}`;
    streamsOf.push(s);
    return s;
  };
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    // Untagged streams' dedup records are `{<stream>}:...`: under the prefix only inside braces.
    for (const s of streamsOf) for (const k of dedupKeys(s)) await redis.unlink(k);
    redis.disconnect();
  });
  // Each entry's fields as a record, with its id as `entryId`.
  const entries = async (s: string): Promise<Record<string, string>[]> =>
    ((await redis.xrange(s, '-', '+')) as [string, string[]][]).map(([entryId, f]) => ({
      entryId,
      ...parseDeadLetter(f),
    }));

  it('writes an id once: a publish again answers the first entry id, concurrently or later', async () => {
    const s = stream('once');
    const seen: ProducerEvent[] = [];
    const p = createStreamProducer({ client: redis, stream: s, observer: (e) => seen.push(e) });
    const [a, b] = await Promise.all([p.publish({ n: 1 }, { id: 'x' }), p.publish({ n: 2 }, { id: 'x' })]);
    const c = await p.publish({ n: 3 }, { id: 'x' });
    // Another producer (another process) of the same stream shares the record.
    const other = createStreamProducer({ client: redis, stream: s });
    const d = await other.publish({ n: 4 }, { id: 'x' });
    expect(new Set([a, b, c, d])).toEqual(new Set([a]));
    const all = await entries(s);
    expect(all).toEqual([{ entryId: a, e: '{"n":1}', i: 'x' }]);
    expect(
      seen.filter((e) => e.type === 'published').map((e) => e.type === 'published' && e.duplicate),
    ).toEqual([false, true, true]);
    await p.close();
    await other.close();
  });

  it('writes an id again once its window has passed, and not before', async () => {
    const s = stream('window');
    const p = createStreamProducer({ client: redis, stream: s, dedup: { window: 300 } });
    const first = await p.publish('a', { id: 'w' });
    await sleep(100);
    expect(await p.publish('a', { id: 'w' })).toBe(first);
    await sleep(300);
    const second = await p.publish('a', { id: 'w' });
    expect(second).not.toBe(first);
    expect(await p.publish('a', { id: 'w' })).toBe(second);
    expect((await entries(s)).map((e) => e.entryId)).toEqual([first, second]);
    // The expired first write left the record without dropping the second one's.
    const [ids, order] = dedupKeys(s);
    await p.publish('b', { id: 'other' });
    await sleep(10);
    expect(await redis.hget(ids, 'w')).toBe(second);
    expect(await redis.lrange(order, 0, -1)).toEqual([`${second} w`, expect.stringMatching(/ other$/)]);
    await p.close();
  });

  it('keeps at most maxIds ids, evicting the oldest first', async () => {
    const s = stream('count');
    const p = createStreamProducer({ client: redis, stream: s, dedup: { maxIds: 3 } });
    const ids = ['a', 'b', 'c', 'd', 'e'];
    const first = await Promise.all(ids.map((id) => p.publish(id, { id })));
    const [idsKey, orderKey] = dedupKeys(s);
    expect(await redis.hlen(idsKey)).toBe(3);
    expect(await redis.llen(orderKey)).toBe(3);
    // c, d, e are still known; a was evicted and is written again.
    expect(await p.publish('c', { id: 'c' })).toBe(first[2]);
    expect(await p.publish('e', { id: 'e' })).toBe(first[4]);
    expect(await p.publish('a', { id: 'a' })).not.toBe(first[0]);
    expect(await redis.xlen(s)).toBe(6);
    await p.close();
  });

  it('round-trips bigints, Dates and nested JSON through the stream field', async () => {
    const s = stream('bigint');
    const p = createStreamProducer({ client: redis, stream: s });
    const event = {
      player: 'p1',
      net: -(2n ** 70n),
      at: new Date(1234),
      list: [1, 'two', null, { $t: 'x' }],
    };
    await p.publish(event, { id: 'big' });
    const [entry] = await entries(s);
    expect(jsonSerializer.deserialize(entry?.e as string)).toEqual(event);
    await p.close();
  });

  it('keeps call order in the stream across batches (1 000 concurrent publishes)', async () => {
    const s = stream('order');
    const p = createStreamProducer({ client: redis, stream: s });
    const n = 1000;
    const ids = await Promise.all(Array.from({ length: n }, (_, i) => p.publish({ i }, { id: `e${i}` })));
    const all = await entries(s);
    expect(all.map((e) => e.i)).toEqual(Array.from({ length: n }, (_, i) => `e${i}`));
    expect(all.map((e) => e.entryId)).toEqual(ids);
    await p.close();
  });

  it('derives ids with `id(event)`, and refuses a publish with neither before any call', async () => {
    const s = stream('derive');
    const p = createStreamProducer({
      client: redis,
      stream: s,
      id: (e) => `order:${(e as { order: number }).order}`,
    });
    const a = await p.publish({ order: 7, v: 1 });
    expect(await p.publish({ order: 7, v: 2 })).toBe(a);
    const bare = createStreamProducer({ client: redis, stream: s });
    await expect(bare.publish({ order: 8 })).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      path: 'options.id',
    });
    await expect(bare.publish(() => 1, { id: 'f' })).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      path: 'event',
    });
    await expect(bare.publish(1, { id: '' })).rejects.toMatchObject({ path: 'options.id' });
    await expect(bare.publish(1, { id: 'x'.repeat(1025) })).rejects.toMatchObject({ path: 'options.id' });
    const small = createStreamProducer({ client: redis, stream: s, maxEventBytes: 10 });
    await expect(small.publish('x'.repeat(20), { id: 'big' })).rejects.toMatchObject({ path: 'event' });
    expect(await redis.xlen(s)).toBe(1);
    await Promise.all([p.close(), bare.close(), small.close()]);
  });

  it('refuses a cyclic event with a typed error naming it, holding nothing (no backlog slot, no write)', async () => {
    const s = stream('cyclic');
    const p = createStreamProducer({ client: redis, stream: s });
    const event: Record<string, unknown> = { n: 1 };
    event.self = event;
    const err = await p.publish(event, { id: 'c1' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path: 'event' });
    expect((err as Error).message).toMatch(/cycle/);
    expect(p.backlog()).toEqual({ events: 0, bytes: 0 });
    // Nothing is pending: the same id is free, and close resolves at once.
    const entryId = await p.publish({ n: 1 }, { id: 'c1' });
    await p.close();
    expect((await entries(s)).map((e) => e.entryId)).toEqual([entryId]);
  });

  it('dead-letters after a terminal error (the stream key holds a string), with reason, attempts, errors, origin', async () => {
    const s = stream('wrongtype');
    await redis.set(s, 'not a stream');
    const seen: ProducerEvent[] = [];
    const p = createStreamProducer({
      client: redis,
      stream: s,
      name: 'settle',
      observer: (e) => seen.push(e),
    });
    const results = await Promise.allSettled([
      p.publish({ n: 1 }, { id: 'p1' }),
      p.publish({ n: 2 }, { id: 'p2' }),
    ]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        code: 'ERR_PUBLISH_FAILED',
        reason: 'terminal-error',
        deadLetterStream: `${s}:dead`,
      });
    }
    const dead = await entries(`${s}:dead`);
    expect(dead.map((d) => d.id)).toEqual(['p1', 'p2']);
    for (const d of dead) {
      expect(d).toMatchObject({ reason: 'terminal-error', origin: 'producer:settle' });
      expect(d.last_error).toMatch(/^WRONGTYPE/);
      expect(d.first_error).toMatch(/^WRONGTYPE/);
      expect(Number(d.at)).toBe(Number(d.entryId?.split('-')[0]));
    }
    expect(dead[0]?.event).toBe('{"n":1}');
    // The batch of two failed, then each alone: two tries each, never retried on a terminal error.
    expect(dead.map((d) => d.attempts)).toEqual(['2', '2']);
    expect(seen.some((e) => e.type === 'retried')).toBe(false);
    expect(await redis.type(s)).toBe('string');
    await p.close();
  });

  it('a lone event of a terminal error is tried once; `deadLetter: false` rejects without a dead letter', async () => {
    const s = stream('wrongtype-lone');
    await redis.set(s, 'x');
    const p = createStreamProducer({ client: redis, stream: s, deadLetter: false });
    await expect(p.publish(1, { id: 'a' })).rejects.toMatchObject({
      code: 'ERR_PUBLISH_FAILED',
      attempts: 1,
      deadLetterId: undefined,
    });
    expect(await redis.exists(`${s}:dead`)).toBe(0);
    await p.close();
  });

  it('close drains what was accepted, then refuses publishes with ERR_CLOSED', async () => {
    const s = stream('close');
    const p = createStreamProducer({ client: redis, stream: s });
    const pending = Array.from({ length: 50 }, (_, i) => p.publish(i, { id: `c${i}` }));
    await p.close();
    expect(p.backlog()).toEqual({ events: 0, bytes: 0 });
    expect((await Promise.all(pending)).length).toBe(50);
    expect(await redis.xlen(s)).toBe(50);
    await expect(p.publish(1, { id: 'late' })).rejects.toMatchObject({ code: 'ERR_CLOSED' });
    const ac = new AbortController();
    const q = createStreamProducer({ client: redis, stream: s, signal: ac.signal });
    const last = q.publish(99, { id: 'c99' });
    ac.abort();
    await expect(q.publish(1, { id: 'after-abort' })).rejects.toMatchObject({ code: 'ERR_CLOSED' });
    expect(typeof (await last)).toBe('string');
  });
});
