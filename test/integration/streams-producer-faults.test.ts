// The stream producer against faults on redis-servers this file starts (never the shared one): a
// server stopped and restarted (the bounded backlog waits, refuses when full, drains after),
// CLIENT KILL while publishing, a reply lost after the script ran (TCP proxy). After each, every
// id is in the stream exactly once, in publish order.
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStreamProducer } from '../../src/streams/producer.js';
import type { ProducerEvent } from '../../src/streams/producer-options.js';
import { type StartedRedis, startRedis } from '../../src/testing/redis-servers.js';
import { startTcpProxy } from '../../src/testing/tcp-proxy.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ready = (c: Redis) =>
  c.status === 'ready' ? Promise.resolve() : new Promise<void>((resolve) => c.once('ready', () => resolve()));

// Counts each id's entries in the stream (field `i`), in stream order.
async function idsInStream(client: Redis, stream: string): Promise<string[]> {
  const all = (await client.xrange(stream, '-', '+')) as [string, string[]][];
  return all.map(([, fields]) => fields[fields.indexOf('i') + 1] as string);
}

describe('stream producer under faults (own redis-server)', () => {
  let server: StartedRedis;
  let direct: Redis;
  const clients: Redis[] = [];
  const client = (port: number, extra: RedisOptions = {}) => {
    const c = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 20, ...extra });
    c.on('error', () => {});
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    server = await startRedis();
    direct = client(server.port);
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await server.remove();
  });

  it('waits in the bounded backlog while the server is down, refuses at once when full, drains in order after a restart', async () => {
    // No offline queue: a command given while disconnected fails at once (retryable), so the
    // producer's own backoff, not ioredis's queue, holds the events.
    const c = client(server.port, { enableOfflineQueue: false });
    await ready(c);
    const seen: ProducerEvent[] = [];
    const p = createStreamProducer({
      client: c,
      stream: 'backlog',
      backlog: { maxEvents: 5 },
      retry: { attempts: 1000, base: 10, max: 50 },
      observer: (e) => seen.push(e),
    });
    await p.publish('before', { id: 'b0' });
    await server.stop();
    await sleep(50);
    const waiting = Array.from({ length: 5 }, (_, i) => p.publish({ i }, { id: `w${i}` }));
    const settled = waiting.map(() => false);
    waiting.forEach((w, i) => void w.finally(() => (settled[i] = true)));
    const started = Date.now();
    await expect(p.publish('one too many', { id: 'full' })).rejects.toMatchObject({
      code: 'ERR_BACKLOG_FULL',
      events: 5,
      maxEvents: 5,
    });
    expect(Date.now() - started).toBeLessThan(50); // at once, not after a retry
    expect(seen.some((e) => e.type === 'backlog-full')).toBe(true);
    await sleep(300);
    expect(settled).toEqual([false, false, false, false, false]);
    expect(seen.some((e) => e.type === 'retried')).toBe(true);
    expect(p.backlog().events).toBe(5);
    server = await startRedis([], { port: server.port, dir: server.dir });
    const entryIds = await Promise.all(waiting);
    expect(new Set(entryIds).size).toBe(5);
    // The restarted server kept nothing (no persistence): the stream holds what was drained, in order.
    expect(await idsInStream(direct, 'backlog')).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
    expect(p.backlog()).toEqual({ events: 0, bytes: 0 });
    await p.close();
  });

  it('dead-letters after the last try while the server is down, and says the dead letter failed too', async () => {
    const c = client(server.port, { enableOfflineQueue: false });
    await ready(c);
    const p = createStreamProducer({ client: c, stream: 'down', retry: { attempts: 3, base: 5, max: 10 } });
    await server.stop();
    await sleep(50);
    const err = await p.publish('x', { id: 'd1' }).catch((e) => e);
    expect(err).toMatchObject({
      code: 'ERR_DEAD_LETTER_FAILED',
      attempts: 3,
      reason: 'publish-failed',
      deadLetterStream: 'down:dead',
    });
    server = await startRedis([], { port: server.port, dir: server.dir });
    await ready(c);
    // Up again but the stream key is of the wrong type for a moment: a retryable outage then
    // ends in a dead letter that is written.
    await direct.set('down', 'string');
    const failed = await p.publish('y', { id: 'd2' }).catch((e) => e);
    expect(failed).toMatchObject({ code: 'ERR_PUBLISH_FAILED', reason: 'terminal-error', attempts: 1 });
    const dead = (await direct.xrange('down:dead', '-', '+')) as [string, string[]][];
    expect(dead.length).toBe(1);
    expect(dead[0]?.[0]).toBe(failed.deadLetterId);
    await p.close();
  });

  it('CLIENT KILL while publishing 3 000 events: each id once, in publish order, every publish answered', async () => {
    // Through a proxy that delays each chunk 3 ms: a kill then often lands after a script ran and
    // before its reply reached the client (the proxy drops what it still holds when the server
    // side closes), the case where a resent script would write its events twice without dedup.
    const proxy = await startTcpProxy(server.port);
    proxy.latency(3);
    const c = client(proxy.port, { connectionName: 'producer-under-kill' });
    const seen: ProducerEvent[] = [];
    const p = createStreamProducer({
      client: c,
      stream: 'killed',
      retry: { attempts: 50, base: 5, max: 50 },
      observer: (e) => seen.push(e),
    });
    const n = 3000;
    let kills = 0;
    let publishing = true;
    const killer = (async () => {
      while (publishing) {
        await sleep(25);
        const list = String(await direct.call('CLIENT', 'LIST', 'TYPE', 'normal'));
        for (const line of list.split('\n')) {
          const id = /^id=(\d+)/.exec(line)?.[1];
          if (id !== undefined && / name=producer-under-kill /.test(line)) {
            await direct.call('CLIENT', 'KILL', 'ID', id).catch(() => {});
            kills++;
          }
        }
      }
    })();
    try {
      const publishes: Promise<string>[] = [];
      for (let i = 0; i < n; i++) {
        publishes.push(p.publish({ i }, { id: `k${i}` }));
        if (i % 20 === 19) await sleep(1); // spread over many batches and many kills
      }
      const entryIds = await Promise.all(publishes);
      publishing = false;
      await killer;
      expect(kills).toBeGreaterThan(5);
      const ids = await idsInStream(direct, 'killed');
      expect(ids.length).toBe(n);
      expect(ids).toEqual(Array.from({ length: n }, (_, i) => `k${i}`));
      expect(new Set(entryIds).size).toBe(n);
      // Some batch did run twice (its reply lost) and was answered from the dedup record.
      expect(seen.some((e) => e.type === 'published' && e.duplicate)).toBe(true);
      await p.close();
    } finally {
      publishing = false;
      await killer;
      c.disconnect();
      await proxy.close();
    }
  });

  for (const resend of [true, false]) {
    it(`a reply lost after the script ran (${resend ? 'ioredis sends it again' : 'the producer retries'}): written once, the publish answers the first entry id`, async () => {
      const proxy = await startTcpProxy(server.port);
      const c = client(proxy.port, {
        autoResendUnfulfilledCommands: resend,
        maxRetriesPerRequest: resend ? 20 : 0,
      });
      try {
        await c.ping();
        const stream = `lost-${resend}`;
        const seen: ProducerEvent[] = [];
        const p = createStreamProducer({
          client: c,
          stream,
          retry: { attempts: 20, base: 5, max: 50 },
          observer: (e) => seen.push(e),
        });
        await p.publish('warm', { id: 'warm' }); // loads the script: the lost call is an EVALSHA
        proxy.loseNextReply();
        const batch = Promise.all(Array.from({ length: 10 }, (_, i) => p.publish({ i }, { id: `l${i}` })));
        const entryIds = await batch;
        expect(proxy.killed).toBe(1);
        const ids = await idsInStream(direct, stream);
        expect(ids).toEqual(['warm', ...Array.from({ length: 10 }, (_, i) => `l${i}`)]);
        const all = (await direct.xrange(stream, '-', '+')) as [string, string[]][];
        expect(entryIds).toEqual(all.slice(1).map(([id]) => id));
        // The second run found every id recorded: answered as duplicates, written nothing.
        const published = seen.filter((e) => e.type === 'published' && e.id !== 'warm');
        expect(published.every((e) => e.type === 'published' && e.duplicate)).toBe(true);
        if (!resend) expect(seen.some((e) => e.type === 'retried')).toBe(true);
        await p.close();
      } finally {
        c.disconnect();
        await proxy.close();
      }
    });
  }
});
