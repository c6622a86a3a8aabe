// The live feed (src/ws/live-feed-redis.ts) on the shared standalone Redis (a unique channel and
// connection name per run) and on a cluster of the test's own: a publish from another client
// reaches the watchers of its user, the subscriber connection lives only while there are watchers,
// and a killed subscriber reconnects and calls every listener (the notices it missed are made up).
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StartedCluster, startCluster } from '../../src/testing/redis-servers.js';
import type { LiveFeed } from '../../src/ws/live-feed.js';
import { createRedisLiveFeed } from '../../src/ws/live-feed-redis.js';
import { REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for `cond` by polling; the bound is generous for a loaded 2-core machine. */
async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const start = performance.now();
  while (!(await cond())) {
    if (performance.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function counter() {
  const c = { n: 0, fn: () => void c.n++ };
  return c;
}

/** The ids of the pub/sub connections named `name` on one server. */
async function subscribers(node: Redis, name: string): Promise<string[]> {
  const list = String(await node.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
  return list
    .split('\n')
    .filter((line) => line.includes(` name=${name} `))
    .map((line) => /\bid=(\d+)/.exec(line)?.[1] ?? '');
}

describe('live feed on standalone Redis', () => {
  const client = new Redis(REDIS_URL);
  const other = new Redis(REDIS_URL);
  const admin = new Redis(REDIS_URL);
  const prefix = runPrefix('ws-live-feed');
  const name = `onceflow-live-test-${process.pid}-${Date.now().toString(36)}`;
  const feeds: LiveFeed[] = [];
  const feed = (c: Redis = client) => {
    const f = createRedisLiveFeed({ client: c, prefix, connectionName: name });
    feeds.push(f);
    return f;
  };
  afterAll(async () => {
    for (const f of feeds) await f.close();
    for (const c of [client, other, admin]) c.disconnect();
  });

  it("a publish from another client reaches this process's watchers of that user", async () => {
    const a = feed();
    const b = feed(other);
    const u1 = counter();
    const u2 = counter();
    const odd = counter();
    const stops = [a.watch('u1', u1.fn), a.watch('u2', u2.fn), a.watch('u:2{x}%é', odd.fn)];
    // Once subscribed, the feed calls every listener (a watch before the SUBSCRIBE took effect
    // may have missed a notice).
    await until('the first subscribe', () => u1.n > 0 && u2.n > 0 && odd.n > 0);
    u1.n = u2.n = odd.n = 0;
    await b.published('u1');
    await until('u1 notified', () => u1.n > 0);
    await b.published('u:2{x}%é');
    await until('the odd user notified', () => odd.n > 0);
    await sleep(100);
    expect(u2.n).toBe(0);
    for (const stop of stops) stop();
  });

  it('one subscriber connection while watched, gone when the last watcher leaves, back on the next watch', async () => {
    const a = feed();
    const x = counter();
    const stops = [a.watch('v1', x.fn), a.watch('v1', x.fn), a.watch('v2', x.fn)];
    await until('subscribed', () => x.n > 0);
    expect(await subscribers(admin, name)).toHaveLength(1);
    for (const stop of stops) stop();
    await until('the subscriber closed', async () => (await subscribers(admin, name)).length === 0);
    const y = counter();
    const stop = a.watch('v1', y.fn);
    await until('subscribed again', () => y.n > 0);
    expect(await subscribers(admin, name)).toHaveLength(1);
    stop();
    await until('the subscriber closed again', async () => (await subscribers(admin, name)).length === 0);
  });

  it('a killed subscriber connection reconnects and calls every listener; later publishes arrive', async () => {
    const a = feed();
    const b = feed(other);
    const w = counter();
    const idle = counter();
    a.watch('w1', w.fn);
    a.watch('w2', idle.fn);
    await until('subscribed', () => w.n > 0 && idle.n > 0);
    const [before] = await subscribers(admin, name);
    expect(before).toBeDefined();
    w.n = idle.n = 0;
    await admin.call('CLIENT', 'KILL', 'ID', before as string);
    // Nothing was published: the calls make up for what may have been missed while down.
    await until('every listener called after the reconnect', () => w.n > 0 && idle.n > 0);
    const after = await subscribers(admin, name);
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before);
    w.n = idle.n = 0;
    await b.published('w1');
    await until('a publish after the reconnect', () => w.n > 0);
    await a.close();
    await until('closed', async () => (await subscribers(admin, name)).length === 0);
    expect(() => a.watch('w1', () => {})).toThrow(expect.objectContaining({ code: 'ERR_CLOSED' }));
    await expect(a.published('w1')).rejects.toMatchObject({ code: 'ERR_CLOSED' });
  });

  it('bad options and input: typed errors', async () => {
    expect(() => createRedisLiveFeed({ client, prefx: 'x' } as never)).toThrow(/did you mean `prefix`/);
    expect(() => createRedisLiveFeed({ client: { call: async () => 1 } as never })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION' }),
    );
    expect(() => createRedisLiveFeed({ client, connectionName: 'a b' })).toThrow(/connectionName/);
    expect(() => createRedisLiveFeed({ client, prefix: 5 as never })).toThrow(/prefix/);
    const a = feed();
    expect(() => a.watch('', () => {})).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }));
    expect(() => a.watch('u1', null as never)).toThrow(/listener/);
    await expect(a.published('')).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    // No watcher was added: no subscriber connection was made.
    await sleep(100);
    expect(await subscribers(admin, name)).toHaveLength(0);
  });
});

describe('live feed on a Redis Cluster', () => {
  let cluster: StartedCluster;
  let a: Cluster;
  let b: Cluster;
  const prefix = 'onceflow-test:live:';
  beforeAll(async () => {
    cluster = await startCluster();
    const seeds = cluster.ports.map((port) => ({ host: '127.0.0.1', port }));
    a = new Cluster(seeds);
    b = new Cluster(seeds);
  });
  afterAll(async () => {
    a?.disconnect();
    b?.disconnect();
    await cluster?.stop();
  });

  it('a publish through any node reaches the watchers; a killed subscriber reconnects and calls them', async () => {
    const feedA = createRedisLiveFeed({ client: a, prefix });
    const feedB = createRedisLiveFeed({ client: b, prefix });
    try {
      const users = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'];
      const counts = users.map((user) => {
        const c = counter();
        feedA.watch(user, c.fn);
        return c;
      });
      await until('subscribed', () => counts.every((c) => c.n > 0));
      // Each PUBLISH goes to a node the cluster client picks: several, so more than one node serves.
      for (let round = 0; round < 3; round++) {
        for (const c of counts) c.n = 0;
        for (const user of users) await feedB.published(user);
        await until('every user notified', () => counts.every((c) => c.n > 0));
      }
      for (const c of counts) c.n = 0;
      const nodes = cluster.ports.map((port) => new Redis({ port, host: '127.0.0.1' }));
      try {
        for (const node of nodes) await node.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
        await until('every listener called after the reconnect', () => counts.every((c) => c.n > 0));
        let subs = 0;
        for (const node of nodes) subs += (await subscribers(node, 'onceflow-live')).length;
        expect(subs).toBe(1);
      } finally {
        for (const node of nodes) node.disconnect();
      }
      for (const c of counts) c.n = 0;
      await feedB.published('c3');
      await until('a publish after the reconnect', () => (counts[2] as ReturnType<typeof counter>).n > 0);
    } finally {
      await feedA.close();
      await feedB.close();
    }
  });
});
