import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisLike } from '../../src/redis/eval.js';
import { commandTokens, forgetStreamFeatures, streamFeatures } from '../../src/streams/redis-features.js';
import { startRetention, trimStream } from '../../src/streams/retention.js';
import { checkReaderPosition, checkTrimmedPast } from '../../src/streams/trimmed-past.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const HOUR = 3_600_000;

describe('stream retention on Redis 7.0', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('streams-retention');
  let n = 0;
  let now = 0;
  const key = () => `${prefix}s${n++}`;

  beforeAll(async () => {
    const [sec, usec] = (await client.call('TIME')) as [string, string];
    now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  });
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  /** Adds `count` entries stamped `agoMs` before the server's clock; returns their ids. */
  async function addAt(stream: string, agoMs: number, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(String(await client.call('XADD', stream, `${now - agoMs}-${i}`, 'e', String(i))));
    }
    return ids;
  }
  const ids = async (stream: string) =>
    ((await client.call('XRANGE', stream, '-', '+')) as [string, unknown][]).map((e) => e[0]);
  const read = (stream: string, group: string, count: number) =>
    client.call('XREADGROUP', 'GROUP', group, 'c1', 'COUNT', count, 'STREAMS', stream, '>');

  it('without groups, trims exactly the entries older than maxAge', async () => {
    const s = key();
    await addAt(s, 2 * HOUR, 3);
    const young = await addAt(s, HOUR / 2, 2);
    const r = await trimStream({ client, stream: s, maxAge: '1h' });
    expect(r).toMatchObject({ trimmed: 3, bound: 'age', group: undefined, mode: 'floor' });
    expect(await ids(s)).toEqual(young);
  });

  it("never trims past a group's oldest pending entry", async () => {
    const s = key();
    const old = await addAt(s, 2 * HOUR, 4);
    await client.call('XGROUP', 'CREATE', s, 'g', '0');
    await read(s, 'g', 3); // old[0..2] pending
    await client.call('XACK', s, 'g', old[0] as string);
    const r = await trimStream({ client, stream: s, maxAge: '1h' });
    expect(r).toMatchObject({ trimmed: 1, bound: 'pending', group: 'g', minId: old[1] });
    expect(await ids(s)).toEqual(old.slice(1));
  });

  it('never trims entries a group has not been delivered yet (a group created at 0 holds all)', async () => {
    const s = key();
    const old = await addAt(s, 2 * HOUR, 3);
    await client.call('XGROUP', 'CREATE', s, 'g', '0');
    const r = await trimStream({ client, stream: s, maxAge: '1h' });
    expect(r).toMatchObject({ trimmed: 0, bound: 'undelivered', group: 'g', minId: '0-1' });
    // Two delivered and acknowledged: those may go, the third not yet.
    await read(s, 'g', 2);
    await client.call('XACK', s, 'g', old[0] as string, old[1] as string);
    const r2 = await trimStream({ client, stream: s, maxAge: '1h' });
    expect(r2).toMatchObject({ trimmed: 2, bound: 'undelivered', minId: `${old[1]?.split('-')[0]}-2` });
    expect(await ids(s)).toEqual([old[2]]);
    expect(await checkTrimmedPast(client, s, 'g')).toMatchObject({ behind: false, missed: 0 });
  });

  it('takes the lowest bound over every group, and trims by age once all are past it', async () => {
    const s = key();
    const old = await addAt(s, 2 * HOUR, 4);
    const young = await addAt(s, HOUR / 4, 1);
    await client.call('XGROUP', 'CREATE', s, 'fast', '0');
    await client.call('XGROUP', 'CREATE', s, 'slow', '0');
    await read(s, 'fast', 5);
    await client.call('XACK', s, 'fast', ...old, ...young);
    await read(s, 'slow', 2); // old[0], old[1] pending in slow
    await client.call('XACK', s, 'slow', old[0] as string);
    const r = await trimStream({ client, stream: s, maxAge: '1h' });
    expect(r).toMatchObject({ trimmed: 1, bound: 'pending', group: 'slow' });
    await client.call('XACK', s, 'slow', old[1] as string);
    await read(s, 'slow', 5);
    await client.call('XACK', s, 'slow', ...old.slice(2), ...young);
    const r2 = await trimStream({ client, stream: s, maxAge: '1h' });
    expect(r2).toMatchObject({ trimmed: 3, bound: 'age' });
    expect(await ids(s)).toEqual(young);
  });

  it('trims nothing while an expected group does not exist', async () => {
    const s = key();
    await addAt(s, 2 * HOUR, 2);
    const r = await trimStream({ client, stream: s, maxAge: '1h', groups: ['billing'] });
    expect(r).toMatchObject({ trimmed: 0, bound: 'missing-group', group: 'billing', minId: undefined });
    expect(await ids(s)).toHaveLength(2);
    // Created at the end ('$'): it wants nothing that is there; its position is the bound.
    await client.call('XGROUP', 'CREATE', s, 'billing', '$');
    expect(await trimStream({ client, stream: s, maxAge: '1h', groups: ['billing'] })).toMatchObject({
      trimmed: 2,
      bound: 'undelivered',
      group: 'billing',
    });
  });

  it('answers no-stream for a missing key and refuses bad options by name', async () => {
    expect(await trimStream({ client, stream: key(), maxAge: '1h' })).toMatchObject({ bound: 'no-stream' });
    await expect(trimStream({ client, stream: key(), maxAge: '1h', limit: 10 })).rejects.toMatchObject({
      code: 'ERR_INVALID_OPTION',
      option: 'limit',
    });
    await expect(trimStream({ client, stream: '', maxAge: '1h' })).rejects.toMatchObject({
      option: 'stream',
    });
    await expect(trimStream({ client, stream: key(), maxAge: 'soon' as never })).rejects.toMatchObject({
      code: 'ERR_INVALID_DURATION',
    });
  });

  it('approximate trimming with LIMIT never trims past the bound', async () => {
    const s = key();
    const old = await addAt(s, 2 * HOUR, 300);
    await client.call('XGROUP', 'CREATE', s, 'g', '0');
    await read(s, 'g', 250);
    await client.call('XACK', s, 'g', ...old.slice(0, 200));
    const r = await trimStream({ client, stream: s, maxAge: '1h', approximate: true, limit: 1000 });
    expect(r.bound).toBe('pending');
    const left = await ids(s);
    // Whole macro nodes (100 entries by default) only: at most the 200 acknowledged ones went.
    expect(left.length).toBeGreaterThanOrEqual(100);
    expect(left).toContain(old[200]);
    expect(r.trimmed).toBe(300 - left.length);
  });

  it('detects Redis 7.0 from its command docs: no ACKED, so the floor script runs', async () => {
    const f = await streamFeatures(client);
    expect(f).toMatchObject({ trimAcked: false, addIdempotent: false, source: 'command-docs' });
    expect(f.version).toMatch(/^\d+\.\d+/);
    expect(await streamFeatures(client)).toBe(f); // cached per client
    // The parser reads the real reply: 7.0's XTRIM has its 6.2 tokens, and no ACKED.
    const tokens = commandTokens(await client.call('COMMAND', 'DOCS', 'XTRIM'))?.get('xtrim');
    expect([...(tokens ?? [])].sort()).toEqual(['=', 'LIMIT', 'MAXLEN', 'MINID', '~']);
  });

  it("mode 'acked' sends XTRIM ... ACKED (refused by 7.0 as a syntax error)", async () => {
    const s = key();
    await addAt(s, 2 * HOUR, 2);
    await expect(trimStream({ client, stream: s, maxAge: '1h', mode: 'acked' })).rejects.toThrow(
      /syntax error/i,
    );
    expect(await ids(s)).toHaveLength(2);
  });

  it('a server that claimed ACKED and refuses it (a failover to 7.0) is detected anew and trimmed the 7.0 way', async () => {
    // The command docs answer of an 8.2 server, then the real 7.0 for everything else.
    let docsAsked = 0;
    const claims82: RedisLike = {
      call(command, ...args) {
        if (command === 'COMMAND' && docsAsked++ === 0) {
          return Promise.resolve(['xtrim', ['arguments', [['name', 'acked', 'token', 'ACKED']]]]);
        }
        return client.call(command, ...args);
      },
    };
    expect(await streamFeatures(claims82)).toMatchObject({ trimAcked: true });
    const s = key();
    const old = await addAt(s, 2 * HOUR, 3);
    await client.call('XGROUP', 'CREATE', s, 'g', '0');
    await read(s, 'g', 1);
    const r = await trimStream({ client: claims82, stream: s, maxAge: '1h' });
    expect(r).toMatchObject({ mode: 'floor', bound: 'pending', trimmed: 0, minId: old[0] });
    expect(await streamFeatures(claims82)).toMatchObject({ trimAcked: false });
    forgetStreamFeatures(claims82);
  });

  it('startRetention trims at once and then every period, until stopped', async () => {
    const s = key();
    await addAt(s, 2 * HOUR, 2);
    const results: number[] = [];
    const retention = startRetention({
      client,
      stream: s,
      maxAge: '1h',
      every: '20ms',
      onTrim: (r) => results.push(r.trimmed),
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    await addAt(s, 90 * 60_000, 1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    await retention.stop();
    const count = results.length;
    expect(results[0]).toBe(2);
    expect(results.reduce((a, b) => a + b, 0)).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(results.length).toBe(count);
  });

  describe('trimmed-past', () => {
    it('a group created at 0 whose entries a plain XTRIM removed is reported, with how far', async () => {
      const s = key();
      const old = await addAt(s, 2 * HOUR, 5);
      await client.call('XGROUP', 'CREATE', s, 'g', '0');
      await read(s, 'g', 1); // old[0] pending
      await client.call('XTRIM', s, 'MINID', old[3] as string);
      const check = await checkTrimmedPast(client, s, 'g');
      expect(check).toMatchObject({
        behind: true,
        exists: true,
        firstId: old[3],
        lastDeliveredId: old[0],
        missed: 2, // old[1], old[2]: never delivered, gone
        pendingTrimmed: 1, // old[0]: delivered, not acknowledged, content gone
        gapMs: 0,
      });
      expect(check.event).toMatchObject({ type: 'trimmed-past', stream: s, group: 'g', missed: 2 });
    });

    it('a group behind an emptied stream is reported; one that read everything is not', async () => {
      const s = key();
      const old = await addAt(s, 2 * HOUR, 3);
      await client.call('XGROUP', 'CREATE', s, 'late', '0');
      await client.call('XGROUP', 'CREATE', s, 'done', '0');
      await read(s, 'done', 3);
      await client.call('XACK', s, 'done', ...old);
      await client.call('XTRIM', s, 'MAXLEN', 0);
      expect(await checkTrimmedPast(client, s, 'late')).toMatchObject({
        behind: true,
        missed: 3,
        firstId: undefined,
      });
      expect(await checkTrimmedPast(client, s, 'done')).toMatchObject({ behind: false, missed: 0 });
    });

    it('a group at an arbitrary id (entries-read unknown) behind removed entries is reported, count unknown', async () => {
      const s = key();
      const old = await addAt(s, 2 * HOUR, 4);
      await client.call('XGROUP', 'CREATE', s, 'g', old[1] as string);
      await client.call('XTRIM', s, 'MINID', old[3] as string);
      expect(await checkTrimmedPast(client, s, 'g')).toMatchObject({ behind: true, missed: undefined });
    });

    it('a trim by trimStream never leaves a group behind', async () => {
      const s = key();
      await addAt(s, 2 * HOUR, 6);
      await client.call('XGROUP', 'CREATE', s, 'g', '0');
      await read(s, 'g', 2);
      await trimStream({ client, stream: s, maxAge: '1h' });
      expect(await checkTrimmedPast(client, s, 'g')).toMatchObject({ behind: false, pendingTrimmed: 0 });
    });

    it('a missing stream or group is not behind; a plain reader is checked by its own position', async () => {
      const s = key();
      expect(await checkTrimmedPast(client, s, 'g')).toMatchObject({ behind: false, exists: false });
      const old = await addAt(s, 2 * HOUR, 5);
      expect(await checkTrimmedPast(client, s, 'nope')).toMatchObject({ exists: false });
      await client.call('XTRIM', s, 'MINID', old[2] as string);
      // Read old[0] only: old[1] is gone unread.
      expect(
        await checkReaderPosition(client, s, { lastId: old[0] as string, entriesRead: 1 }),
      ).toMatchObject({
        behind: true,
        missed: 1,
        firstId: old[2],
      });
      // Read old[0] and old[1]: nothing it had not read is gone.
      expect(
        await checkReaderPosition(client, s, { lastId: old[1] as string, entriesRead: 2 }),
      ).toMatchObject({
        behind: false,
        missed: 0,
      });
      // Without a count: reported as possibly behind.
      expect(await checkReaderPosition(client, s, { lastId: old[0] as string })).toMatchObject({
        behind: true,
        missed: undefined,
      });
      expect(await checkReaderPosition(client, s, { lastId: old[2] as string })).toMatchObject({
        behind: false,
      });
      expect(await checkReaderPosition(client, key(), { lastId: '0-0' })).toMatchObject({ exists: false });
    });
  });
});
