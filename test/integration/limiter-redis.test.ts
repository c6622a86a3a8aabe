// The limiter on a real Redis and the 3-master cluster: server time (TIME) or the caller's
// (`clock: 'client'`), a TTL on every key (the sorted-set log above limit 512 included), tenant
// resets that touch only their own keys (hostile ids included), degraded mode when the server is
// gone, and the memory each algorithm's state takes per key (MEMORY USAGE, against docs/limits.md).
import { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  createLedger,
  createLimiter,
  createTenantRegistry,
  FakeClock,
  type LimitOptions,
  memoryStore,
  VersionGate,
} from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { freePort } from '../support/redis-servers.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

async function keysUnder(client: Redis | Cluster, prefix: string): Promise<string[]> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const all: string[] = [];
  for (const node of nodes) all.push(...(await node.keys(`${prefix}*`)));
  return all.sort();
}

const ALL: LimitOptions[] = [
  { id: 'log', algorithm: 'sliding-log', limit: 5, window: '1s' },
  { id: 'buckets', algorithm: 'sliding-window', limit: 5, window: '1s', granularity: '100ms' },
  { id: 'fixed', algorithm: 'fixed-window', limit: 5, window: '1s' },
  { id: 'gcra', algorithm: 'gcra', limit: 5, window: '1s' },
];

for (const target of [
  { name: 'standalone', client: (): Redis | Cluster => new Redis(REDIS_URL) },
  { name: 'cluster', client: (): Redis | Cluster => clusterClient() },
]) {
  describe(`limiter on Redis (${target.name})`, () => {
    const client = target.client();
    const prefix = runPrefix(`limiter-${target.name}`);
    const store = createRedisStore({ client, prefix });
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });

    it('decides on server time, and every key it writes has a TTL', async () => {
      const limiter = createLimiter({ store, name: 'ttl', limits: ALL, blockCache: false });
      const before = Date.now();
      const r = await limiter.take('user-1', { cost: 2 });
      expect(r.allowed).toBe(true);
      expect(Math.abs(r.at - before)).toBeLessThan(5000); // Redis TIME, on this machine's clock
      const keys = await keysUnder(client, `${prefix}{|l:ttl:`);
      expect(keys).toHaveLength(4); // one key per limit
      for (const key of keys) {
        const ttl = await client.pttl(key);
        expect(ttl, key).toBeGreaterThan(0);
        expect(ttl, key).toBeLessThanOrEqual(2000 + 1000); // the state's end + the slack
      }
    });

    it('sliding-log: two requests in one millisecond are two entries', async () => {
      const clock = new FakeClock(1_000_000);
      const limiter = createLimiter({
        store,
        clock,
        name: 'same-ms',
        algorithm: 'sliding-log',
        limit: 2,
        window: '1s',
        blockCache: false,
      });
      const [a, b, c] = await Promise.all([limiter.take('u'), limiter.take('u'), limiter.take('u')]);
      expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false]);
      expect(c.retryAfterMs).toBe(1000);
      // The log string: total 2, newest and oldest 1 000 000, then two entries of the same
      // millisecond (the first's delta is not read, the second's is 0).
      expect(await client.get(`${prefix}{|l:same-ms:u}:2%2F1s:d1000`)).toBe('2,1000000,1000000|0,0,');
    });

    it('sliding logs of one id on both sides of limit 512 keep apart keys (a string, a sorted set)', async () => {
      // The representation is in the key's name: a limit raised past 512 under the same id starts
      // on a fresh key instead of reading a string as a sorted set (WRONGTYPE) or the reverse.
      const make = (limit: number) =>
        createLimiter({ store, name: 'shape', algorithm: 'sliding-log', id: 'ip/s', limit, window: '10s' });
      for (const limit of [100, 1000, 100, 1000]) expect((await make(limit).take('u')).allowed).toBe(true);
      const types = await Promise.all(
        (await keysUnder(client, `${prefix}{|l:shape:`)).map((k) => client.type(k)),
      );
      expect(types.sort()).toEqual(['string', 'zset']);
    });

    it('a sliding log above limit 512 (a sorted set) has a TTL too, after the first take and later ones', async () => {
      const limiter = createLimiter({
        store,
        name: 'zttl',
        algorithm: 'sliding-log',
        limit: 1000,
        window: '10s',
        blockCache: false,
      });
      for (let i = 0; i < 3; i++) {
        expect((await limiter.take('u', { cost: 2 })).allowed).toBe(true);
        const keys = await keysUnder(client, `${prefix}{|l:zttl:`);
        expect(keys).toHaveLength(1);
        const key = keys[0] as string;
        expect(await client.type(key)).toBe('zset');
        const ttl = await client.pttl(key);
        expect(ttl, key).toBeGreaterThan(0);
        expect(ttl, key).toBeLessThanOrEqual(10_000 + 1000); // the log's end + the slack
      }
    });

    it("clock: 'client' decides on this process's Date.now, and a refusal's wait is counted on it", async () => {
      // Date.now 3 days behind Redis's TIME: a decision on the server's time would show it.
      let now = Date.now() - 3 * 86_400_000;
      const spy = vi.spyOn(Date, 'now').mockImplementation(() => now);
      try {
        const limiter = createLimiter({
          store,
          clock: 'client',
          name: 'client-clock',
          algorithm: 'sliding-log',
          limit: 2,
          window: '10s',
        });
        const first = await limiter.take('u');
        expect(first).toMatchObject({ allowed: true, at: now });
        now += 4000;
        expect(await limiter.take('u')).toMatchObject({ allowed: true, at: now });
        now += 1000;
        const refused = await limiter.take('u');
        // The first entry leaves the window 10 s after it was taken, on the client's clock: 5 s on.
        expect(refused).toMatchObject({ allowed: false, reason: 'limited', at: now, retryAfterMs: 5000 });
        expect(refused.resetAt).toBe(first.at + 4000 + 10_000); // the newest entry's end
        now += 4999;
        expect((await limiter.take('u')).allowed).toBe(false);
        now += 1;
        expect(await limiter.take('u')).toMatchObject({ allowed: true, at: now });
      } finally {
        spy.mockRestore();
      }
    });

    it('a broken clock fails its own take, not the batch it would have shared', async () => {
      const healthy = createLimiter({ store, name: 'clock-ok', algorithm: 'gcra', limit: 5, window: '1s' });
      const broken = createLimiter({
        store,
        name: 'clock-bad',
        clock: { now: () => Number.NaN },
        algorithm: 'gcra',
        limit: 5,
        window: '1s',
      });
      // A fractional clock (performance.now() based) is floored to whole ms: a fractional TTL
      // would make SET PX fail the whole batch, and memory and Redis would round apart.
      const fractional = createLimiter({
        store,
        name: 'clock-frac',
        clock: { now: () => 1_000_000.75 },
        limits: ALL,
      });
      const [a, b, c, d] = await Promise.allSettled([
        healthy.take('u'),
        broken.take('u'),
        healthy.take('v'),
        fractional.take('u', { cost: 2 }),
      ]);
      expect(a.status === 'fulfilled' && a.value.allowed).toBe(true);
      expect(b.status === 'rejected' && String(b.reason)).toContain('clock.now()');
      expect(c.status === 'fulfilled' && c.value.allowed).toBe(true);
      expect(d.status === 'fulfilled' && d.value).toMatchObject({ allowed: true, at: 1_000_000 });
      const memory = createLimiter({
        store: memoryStore(),
        name: 'clock-frac',
        clock: { now: () => 1_000_000.75 },
        limits: ALL,
      });
      const fromMemory = await memory.take('u', { cost: 2 });
      expect(d.status === 'fulfilled' && d.value.limits).toEqual(fromMemory.limits);
    });

    it('a refusal writes nothing (TTLs and values unchanged)', async () => {
      const limiter = createLimiter({ store, name: 'nowrite', limits: ALL, blockCache: false });
      await limiter.take('u', { cost: 5 });
      const keys = await keysUnder(client, `${prefix}{|l:nowrite:`);
      const dump = async () => Promise.all(keys.map(async (k) => [k, await client.dump(k)]));
      const before = await dump();
      const r = await limiter.take('u', { cost: 1 });
      expect(r.allowed).toBe(false);
      expect(await dump()).toEqual(before);
    });

    it('tenant reset clears that tenant only, whatever its id', async () => {
      const tenants = createTenantRegistry({ store });
      const ids = ['a', 'a:b', '{a}', 'a}', '*', 'a*', '[a]', 'a\\'];
      for (const id of ids)
        tenants.init(id, { algorithm: 'sliding-log', limit: 1, window: '1m', blockCache: false });
      for (const id of ids) expect((await tenants.take(id, 'k')).allowed).toBe(true);
      const before = await keysUnder(client, prefix);
      expect(await tenants.reset('*')).toBe(1);
      expect(await tenants.reset('a')).toBe(1);
      const after = await keysUnder(client, prefix);
      expect(before.length - after.length).toBe(2);
      expect((await tenants.take('a', 'k')).allowed).toBe(true);
      expect((await tenants.take('*', 'k')).allowed).toBe(true);
      for (const id of ids.filter((x) => x !== 'a' && x !== '*'))
        expect((await tenants.take(id, 'k')).allowed).toBe(false);
    });

    it('a tenant or limiter reset never touches the ledger, scope or ordering keys sharing the store', async () => {
      // A ledger named `t` keeps owner `acme` at `{t:acme}:s`: the key a reset of tenant `acme`
      // matched before limiter namespaces began with `|`. Names `l`/`ord`/`vg` likewise.
      const ledgers = ['t', 'l'].map((name) => createLedger({ store, capacity: 4, name }));
      for (const ledger of ledgers) {
        await ledger.apply({ owner: 'acme', signature: 's', deltas: { coins: 7 }, scope: 'acme' });
      }
      const gate = new VersionGate({ store, name: 't' });
      await gate.upsert('acme', 1, { kept: true });
      const tenants = createTenantRegistry({ store });
      tenants.init('acme', { algorithm: 'gcra', limit: 1, window: '1m', blockCache: false });
      expect((await tenants.take('acme', 'acme')).allowed).toBe(true);
      const named = createLimiter({ store, name: 'acme', algorithm: 'gcra', limit: 1, window: '1m' });
      expect((await named.take('acme')).allowed).toBe(true);
      expect(await tenants.reset('acme')).toBe(1);
      for (const ledger of ledgers) {
        expect(await ledger.balances('acme')).toEqual({ coins: 7n });
        expect(await ledger.totals('acme')).toEqual({ coins: 7n });
        expect(await ledger.journal({ owner: 'acme' })).toHaveLength(1);
      }
      expect(await gate.get('acme')).toEqual({ version: 1n, value: { kept: true } });
      expect((await named.take('acme')).allowed).toBe(false); // another namespace: untouched
    });

    it('multi-subject limits share one hash tag (no CROSSSLOT on the cluster)', async () => {
      const limiter = createLimiter({
        store,
        name: 'multi',
        blockCache: false,
        limits: [
          { id: 'user', algorithm: 'gcra', limit: 2, window: '1s', by: 'user' },
          { id: 'ip', algorithm: 'sliding-log', limit: 3, window: '1s', by: 'ip' },
        ],
      });
      const results = [];
      for (const user of ['u1', 'u2', 'u3', 'u4']) results.push(await limiter.take({ user, ip: '10.0.0.1' }));
      expect(results.map((r) => [r.allowed, r.bound])).toEqual([
        [true, 'user'], // allowed: the bound limit is the one with the least remaining
        [true, 'user'],
        [true, 'ip'],
        [false, 'ip'],
      ]);
    });
  });
}

describe('limiter state per key on Redis (MEMORY USAGE)', () => {
  // The documented bytes per key (docs/limits.md, *Limits on Redis*: Redis 7.0, limit 100 per
  // minute, after 1 request / after 100), measured by bench/limiter.bench.mjs with a shorter
  // prefix. The bound is 2x: it catches a state that grows out of its documented shape (a log
  // whose entries are times, not deltas; a window that writes its empty buckets), not a change of
  // allocator or Redis version.
  const DOCUMENTED_BYTES: Record<string, [one: number, full: number]> = {
    'sliding-log': [152, 360],
    'sliding-window': [152, 152],
    'fixed-window': [136, 136],
    gcra: [136, 136],
  };

  it('each algorithm stays within 2x of the documented figure, after 1 request and after 100', async () => {
    const client = new Redis(REDIS_URL);
    const prefix = runPrefix('limiter-bytes');
    const bytesUnder = async (pattern: string) => {
      let total = 0;
      for (const key of await client.keys(pattern))
        total += Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
      return total;
    };
    try {
      const store = createRedisStore({ client, prefix });
      for (const [algorithm, [one, full]] of Object.entries(DOCUMENTED_BYTES)) {
        const name = `bytes-${algorithm}`;
        const limiter = createLimiter({
          store,
          name,
          algorithm: algorithm as LimitOptions['algorithm'],
          limit: 100,
          window: '1m',
          ...(algorithm === 'sliding-window' ? { granularity: '1s' } : {}),
          blockCache: false,
        });
        expect((await limiter.take('k')).allowed).toBe(true);
        const afterOne = await bytesUnder(`${prefix}{|l:${name}:*`);
        if (algorithm === 'sliding-window') {
          // One bucket of 61 has a count: only it is written (the newest, j = 60).
          const [key] = await client.keys(`${prefix}{|l:${name}:*`);
          expect(await client.get(key as string)).toMatch(/^\d+\|60=1,$/);
        }
        for (let i = 0; i < 99; i++) await limiter.take('k');
        const afterFull = await bytesUnder(`${prefix}{|l:${name}:*`);
        expect(afterOne, `${algorithm} after 1 request`).toBeGreaterThan(0);
        expect(afterOne, `${algorithm} after 1 request`).toBeLessThan(2 * one);
        expect(afterFull, `${algorithm} after 100 requests`).toBeLessThan(2 * full);
      }
    } finally {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    }
  });
});

describe('limiter degraded mode with a Redis that is gone', () => {
  it("'deny', 'allow' and 'local' decide within the timeout; the default throws ERR_STORE", async () => {
    const port = await freePort(); // nothing listens here
    const client = new Redis({
      port,
      lazyConnect: true,
      enableOfflineQueue: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 50,
    });
    client.on('error', () => {});
    const store = createRedisStore({ client, prefix: 'gone:' });
    const base = { store, algorithm: 'gcra', limit: 4, window: '1s', timeout: '50ms' } as const;
    try {
      const throwing = await createLimiter(base)
        .take('u')
        .catch((e: { code?: string }) => e.code);
      expect(throwing).toBe('ERR_STORE');
      expect(await createLimiter({ ...base, degraded: 'deny' }).take('u')).toMatchObject({
        allowed: false,
        reason: 'degraded-deny',
      });
      expect(await createLimiter({ ...base, degraded: 'allow' }).take('u')).toMatchObject({
        allowed: true,
        reason: 'degraded-allow',
      });
      const local = createLimiter({ ...base, degraded: { mode: 'local', share: 0.5 } });
      const outcomes = [];
      for (let i = 0; i < 3; i++) outcomes.push((await local.take('u')).allowed);
      expect(outcomes).toEqual([true, true, false]);
    } finally {
      client.disconnect();
    }
  });
});

describe('tenant reset on Redis with a take in flight', () => {
  it('a refusal answered during the reset does not block the key after it', async () => {
    const client = new Redis(REDIS_URL);
    const prefix = runPrefix('reset-inflight');
    try {
      const tenants = createTenantRegistry({ store: createRedisStore({ client, prefix }) });
      tenants.init('t', { algorithm: 'fixed-window', limit: 1, window: '60s' });
      expect((await tenants.take('t', 'u')).allowed).toBe(true);
      const inflight = tenants.take('t', 'u'); // refused by the store; its answer lands during the reset
      await tenants.reset('t');
      expect((await inflight).allowed).toBe(false);
      expect((await tenants.take('t', 'u')).allowed).toBe(true);
    } finally {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    }
  });
});
