// onceflow's rate-limit plugin for Fastify over real HTTP (fastify.listen on a free port, fetch),
// on the memory store and on Redis: the RateLimit headers of a multi-limit decision, the 429
// problem, Retry-After at a window's edge (FakeClock), skip, key, cost, per-route policy,
// encapsulation, and a failing store passed or failed.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/core/errors.js';
import { type RateLimitPluginOptions, rateLimitPlugin } from '../../src/fastify/index.js';
import { PROBLEM_BASE } from '../../src/http/problem.js';
import { createLimiter, FakeClock, type LimitOptions, memoryStore } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

// On a window edge: fixed windows are aligned on multiples of their length (1 s and 1 min).
const T0 = 1_800_000_000_000;
const LIMITS: LimitOptions[] = [
  { id: 'burst', algorithm: 'fixed-window', limit: 3, window: '1s' },
  { id: 'minute', algorithm: 'fixed-window', limit: 5, window: '1m' },
];

const redis = new Redis(REDIS_URL);
const prefix = runPrefix('fastify-rate-limit');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

let n = 0;
const BACKENDS: { name: string; store(clock: FakeClock): Store; broken(): Store }[] = [
  {
    name: 'memory',
    store: (clock) => memoryStore({ clock }),
    broken: () => ({
      ...memoryStore(),
      kind: 'broken',
      limiterTake: () => Promise.reject(new StoreError('limiterTake', new Error('down'))),
    }),
  },
  {
    name: 'redis',
    store: () => createRedisStore({ client: redis, prefix: `${prefix}${++n}:` }),
    broken: () => {
      // A closed client: every command is refused at once.
      const gone = new Redis(REDIS_URL, { lazyConnect: true });
      gone.disconnect();
      return createRedisStore({ client: gone, prefix, timeout: '2s' });
    },
  },
];

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function serve(options: RateLimitPluginOptions, routes?: (app: FastifyInstance) => void) {
  const app = Fastify();
  apps.push(app);
  await app.register(rateLimitPlugin, options);
  if (routes === undefined) app.get('/', async () => ({ ok: true }));
  else routes(app);
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  return (path = '/', init?: RequestInit) => fetch(base + path, init);
}

for (const backend of BACKENDS) {
  describe(`rateLimitPlugin on ${backend.name}`, () => {
    const setup = () => {
      const clock = new FakeClock(T0);
      const limiter = createLimiter({
        store: backend.store(clock),
        name: `api-${++n}`,
        limits: LIMITS,
        clock,
        blockCache: false,
      });
      return { clock, limiter };
    };

    it('sends every limit of the one decision in RateLimit-Policy and RateLimit', async () => {
      const { limiter } = setup();
      const get = await serve({ limiter });
      const res = await get();
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true });
      expect(res.headers.get('ratelimit-policy')).toBe('"burst";q=3;w=1, "minute";q=5;w=60');
      expect(res.headers.get('ratelimit')).toBe('"burst";r=2;t=1, "minute";r=4;t=60');
      expect(res.headers.get('retry-after')).toBeNull();
    });

    it('answers 429 with a problem body and Retry-After, charging no limit; passes again at the edge', async () => {
      const { clock, limiter } = setup();
      const get = await serve({ limiter });
      for (let i = 0; i < 3; i++) expect((await get()).status).toBe(200);
      clock.advance(999);
      const refused = await get();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      // 1 ms left: Retry-After rounds up, so a client never comes back early.
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('ratelimit')).toBe('"burst";r=0;t=1, "minute";r=2;t=60');
      expect(await refused.json()).toEqual({
        type: `${PROBLEM_BASE}rate-limited`,
        title: 'Too Many Requests',
        status: 429,
        detail: 'Too many requests; retry after 1 s.',
        retryAfter: 1,
      });
      clock.advance(1);
      const next = await get();
      expect(next.status).toBe(200);
      // All or nothing: the refused request charged 'minute' nothing (5 - 3 - 1 = 1 left).
      expect(next.headers.get('ratelimit')).toBe('"burst";r=2;t=1, "minute";r=1;t=59');
    });

    it('the minute limit binds when the burst has room: Retry-After is its wait', async () => {
      const { clock, limiter } = setup();
      const get = await serve({ limiter });
      for (let i = 0; i < 5; i++) {
        expect((await get()).status).toBe(200);
        clock.advance(1_000);
      }
      const refused = await get();
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('55');
    });

    it('skip: a skipped request is not counted and carries no headers', async () => {
      const { limiter } = setup();
      const get = await serve({ limiter, skip: (request) => request.url === '/health' }, (app) => {
        app.get('/', async () => 'ok');
        app.get('/health', async () => 'up');
      });
      for (let i = 0; i < 5; i++) {
        const res = await get('/health');
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit')).toBeNull();
      }
      expect((await get('/')).headers.get('ratelimit')).toBe('"burst";r=2;t=1, "minute";r=4;t=60');
    });

    it('key: each API key counts apart; cost: a costly route takes more', async () => {
      const { limiter } = setup();
      const get = await serve(
        {
          limiter,
          key: (request) => String(request.headers['x-api-key'] ?? 'anonymous'),
          cost: (request) => (request.url === '/export' ? 3 : 1),
        },
        (app) => {
          app.get('/', async () => 'ok');
          app.get('/export', async () => 'csv');
        },
      );
      const as = (key: string, path = '/') => get(path, { headers: { 'x-api-key': key } });
      expect((await as('a', '/export')).headers.get('ratelimit')).toBe('"burst";r=0;t=1, "minute";r=2;t=60');
      expect((await as('a')).status).toBe(429);
      expect((await as('b')).headers.get('ratelimit')).toBe('"burst";r=2;t=1, "minute";r=4;t=60');
    });

    it('per route: its own limiter, or none; global: false limits only configured routes', async () => {
      const { limiter } = setup();
      const strict = createLimiter({
        store: memoryStore(),
        limits: [{ id: 'strict', algorithm: 'fixed-window', limit: 1, window: '1h' }],
      });
      const get = await serve({ limiter }, (app) => {
        app.get('/', async () => 'ok');
        app.get('/free', { config: { onceflow: { rateLimit: false } } }, async () => 'free');
        app.get('/strict', { config: { onceflow: { rateLimit: { limiter: strict } } } }, async () => 's');
      });
      expect((await get('/free')).headers.get('ratelimit')).toBeNull();
      expect((await get('/strict')).headers.get('ratelimit-policy')).toBe('"strict";q=1;w=3600');
      expect((await get('/strict')).status).toBe(429);
      expect((await get('/')).headers.get('ratelimit')).toBe('"burst";r=2;t=1, "minute";r=4;t=60');

      const only = await serve({ global: false }, (app) => {
        app.get('/', async () => 'ok');
        app.get('/limited', { config: { onceflow: { rateLimit: { limiter } } } }, async () => 'l');
      });
      expect((await only('/')).headers.get('ratelimit')).toBeNull();
      expect((await only('/limited')).headers.get('ratelimit')).toBe('"burst";r=1;t=1, "minute";r=3;t=60');
    });

    for (const onStoreError of ['pass', 'fail'] as const) {
      it(`a failing store with onStoreError: '${onStoreError}' ${onStoreError === 'pass' ? 'lets the request through' : 'is a 500'}`, async () => {
        const limiter = createLimiter({ store: backend.broken(), limits: LIMITS, blockCache: false });
        const get = await serve({ limiter, onStoreError });
        const res = await get();
        expect(res.status).toBe(onStoreError === 'pass' ? 200 : 500);
        expect(res.headers.get('ratelimit')).toBeNull();
      });
    }
  });
}

describe('rateLimitPlugin in Fastify', () => {
  const limiter = () =>
    createLimiter({ store: memoryStore(), limits: [{ algorithm: 'fixed-window', limit: 5, window: '1m' }] });

  it('applies to the routes of the context it is registered in, not to a parent context', async () => {
    const app = Fastify();
    apps.push(app);
    app.get('/outside', async () => 'out');
    await app.register(async (child) => {
      await child.register(rateLimitPlugin, { limiter: limiter() });
      child.get('/inside', async () => 'in');
      await child.register(async (grandchild) => {
        grandchild.get('/deeper', async () => 'deep');
      });
    });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    expect((await fetch(`${base}/outside`)).headers.get('ratelimit')).toBeNull();
    expect((await fetch(`${base}/inside`)).headers.get('ratelimit')).not.toBeNull();
    expect((await fetch(`${base}/deeper`)).headers.get('ratelimit')).not.toBeNull();
  });

  it('refuses a bad option at registration and a bad route policy where the route is declared', async () => {
    const app = Fastify();
    apps.push(app);
    await expect(
      app.register(rateLimitPlugin, { limiter: limiter(), skipp: () => true } as never),
    ).rejects.toThrow(/did you mean `skip`/);
    const other = Fastify();
    apps.push(other);
    await expect(other.register(rateLimitPlugin, {})).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });

    const third = Fastify();
    apps.push(third);
    await third.register(rateLimitPlugin, { limiter: limiter() });
    expect(() =>
      third.get('/x', { config: { onceflow: { rateLimit: { limitr: 1 } as never } } }, async () => 'x'),
    ).toThrow(/GET \/x: config\.onceflow\.rateLimit\.limitr.*did you mean `limiter`/);
  });
});

describe('rateLimitPlugin in 4 processes sharing one Redis', () => {
  const worker = fileURLToPath(new URL('./fixtures/fastify-server-worker.mjs', import.meta.url));
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) child.stdin?.end();
  });

  it('admits exactly the limit across the servers, whichever server a request reaches', async () => {
    // A sliding log an hour long: no window edge falls inside the run.
    const limits = [
      { id: 'hour', algorithm: 'sliding-log', limit: 25, window: '1h' },
      { id: 'day', algorithm: 'fixed-window', limit: 1000, window: '1d' },
    ];
    const config = { url: REDIS_URL, prefix: `${prefix}workers:`, limits };
    const urls = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const child = spawn(process.execPath, [worker, JSON.stringify(config)], {
          cwd: root,
          stdio: ['pipe', 'pipe', 'inherit'],
        });
        children.push(child);
        const [line] = (await once(child.stdout, 'data')) as [Buffer];
        return line.toString().trim();
      }),
    );
    const statuses = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        fetch(`${urls[i % 4]}/`, { headers: { 'x-api-key': 'shared-key' } }).then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        }),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(25);
    expect(statuses.filter((s) => s === 429)).toHaveLength(75);
    // Another key has its own budget on every server.
    expect((await fetch(`${urls[3]}/`, { headers: { 'x-api-key': 'other' } })).status).toBe(200);
  });
});
