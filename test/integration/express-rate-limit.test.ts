// onceflow/express's rateLimit over real HTTP: an Express app on a free port, `fetch` from the
// test, on the memory store and on Redis (a fake clock passed in: the window edges are exact).
// Then 4 processes, each an Express server on one Redis, admit exactly the limit between them,
// with rateLimit and with express-rate-limit counting on OnceflowStore.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import express from 'express';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import { rateLimit } from '../../src/express/index.js';
import { PROBLEM_BASE } from '../../src/http/problem.js';
import { createLimiter } from '../../src/limiter/limiter.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { listen } from '../support/express-app.js';
import { silentServer } from '../support/silent-server.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const HOUR = 3_600_000;
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % HOUR);
const redis = new Redis(REDIS_URL);
const prefix = runPrefix('express-rate-limit');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

let n = 0;
const TARGETS: { name: string; store: () => Store }[] = [
  { name: 'memory', store: () => memoryStore() },
  { name: 'redis', store: () => createRedisStore({ client: redis, prefix: `${prefix}${n++}:` }) },
];

// Two limits decided together: 2 per 10 s and 5 per hour.
function twoLimits(store: Store, clock: FakeClock, name = 'api') {
  return createLimiter({
    store,
    name,
    clock,
    limits: [
      { id: 'burst', algorithm: 'fixed-window', limit: 2, window: '10s' },
      { id: 'hour', algorithm: 'fixed-window', limit: 5, window: '1h' },
    ],
  });
}

async function serve(app: express.Express, body: (url: string) => Promise<void>) {
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  app.get('/health', (_req, res) => {
    res.send('up');
  });
  const server = await listen(app);
  try {
    await body(server.url);
  } finally {
    await server.close();
  }
}

describe.each(TARGETS)('rateLimit on the $name store', (target) => {
  it('sends both limits in RateLimit-Policy and RateLimit, and a 429 problem with Retry-After', async () => {
    const clock = new FakeClock(T0);
    const app = express();
    app.use(rateLimit({ limiter: twoLimits(target.store(), clock) }));
    await serve(app, async (url) => {
      const first = await fetch(url);
      expect(first.status).toBe(200);
      expect(await first.text()).toBe('ok');
      expect(first.headers.get('ratelimit-policy')).toBe('"burst";q=2;w=10, "hour";q=5;w=3600');
      expect(first.headers.get('ratelimit')).toBe('"burst";r=1;t=10, "hour";r=4;t=3600');
      expect(first.headers.get('retry-after')).toBeNull();
      expect((await fetch(url)).status).toBe(200);

      const refused = await fetch(url);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(refused.headers.get('retry-after')).toBe('10');
      expect(refused.headers.get('ratelimit')).toBe('"burst";r=0;t=10, "hour";r=3;t=3600');
      expect(await refused.json()).toEqual({
        type: `${PROBLEM_BASE}rate-limited`,
        title: 'Too Many Requests',
        status: 429,
        detail: 'Too many requests; retry after 10 s.',
        retryAfter: 10,
      });
    });
  });

  it('at the window edge: t counts down to 1, then the next window admits', async () => {
    const clock = new FakeClock(T0);
    const app = express();
    app.use(rateLimit({ limiter: twoLimits(target.store(), clock) }));
    await serve(app, async (url) => {
      await fetch(url);
      await fetch(url);
      clock.advance(9_999);
      const last = await fetch(url);
      expect(last.status).toBe(429);
      expect(last.headers.get('retry-after')).toBe('1');
      expect(last.headers.get('ratelimit')).toBe('"burst";r=0;t=1, "hour";r=3;t=3591');
      clock.advance(1);
      const next = await fetch(url);
      expect(next.status).toBe(200);
      expect(next.headers.get('ratelimit')).toBe('"burst";r=1;t=10, "hour";r=2;t=3590');
    });
  });

  it('refuses on the hour limit once the burst limit has room again, charging neither', async () => {
    const clock = new FakeClock(T0);
    const app = express();
    app.use(rateLimit({ limiter: twoLimits(target.store(), clock) }));
    await serve(app, async (url) => {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        statuses.push((await fetch(url)).status, (await fetch(url)).status);
        clock.advance(10_000);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
      const refused = await fetch(url);
      expect(refused.headers.get('ratelimit')).toMatch(/^"burst";r=\d;t=0, "hour";r=0;t=3560$/);
      expect(refused.headers.get('retry-after')).toBe('3560');
    });
  });

  it('skip: not counted and no headers; key: one count per user', async () => {
    const clock = new FakeClock(T0);
    const app = express();
    app.use(
      rateLimit({
        limiter: twoLimits(target.store(), clock),
        skip: (req) => req.path === '/health',
        key: (req) => req.get('x-user') ?? req.ip ?? 'unknown',
      }),
    );
    await serve(app, async (url) => {
      for (let i = 0; i < 5; i++) {
        const health = await fetch(`${url}/health`, { headers: { 'x-user': 'a' } });
        expect(health.status).toBe(200);
        expect(health.headers.get('ratelimit')).toBeNull();
      }
      const as = [];
      for (let i = 0; i < 3; i++) as.push((await fetch(url, { headers: { 'x-user': 'a' } })).status);
      expect(as).toEqual([200, 200, 429]);
      expect((await fetch(url, { headers: { 'x-user': 'b' } })).status).toBe(200);
    });
  });

  it('per route: one middleware per route, each with its own limiter; cost per request', async () => {
    const clock = new FakeClock(T0);
    const store = target.store();
    const login = createLimiter({
      store,
      name: 'login',
      clock,
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
    });
    const exportLimiter = createLimiter({
      store,
      name: 'export',
      clock,
      algorithm: 'fixed-window',
      limit: 10,
      window: '1m',
    });
    const app = express();
    app.post('/login', rateLimit({ limiter: login }), (_req, res) => {
      res.send('in');
    });
    app.get('/export', rateLimit({ limiter: exportLimiter, cost: () => 4 }), (_req, res) => {
      res.send('csv');
    });
    await serve(app, async (url) => {
      expect((await fetch(`${url}/login`, { method: 'POST' })).status).toBe(200);
      expect((await fetch(`${url}/login`, { method: 'POST' })).status).toBe(429);
      const exports = [];
      for (let i = 0; i < 3; i++) exports.push(await fetch(`${url}/export`));
      expect(exports.map((r) => r.status)).toEqual([200, 200, 429]);
      expect(exports[1]?.headers.get('ratelimit')).toBe('"10/1m";r=2;t=60');
    });
  });

  it('counting by address under trust proxy true: every request refused to the error handler, nothing counted', async () => {
    const clock = new FakeClock(T0);
    const limiter = twoLimits(target.store(), clock, 'trusting');
    const app = express();
    app.set('trust proxy', true);
    app.get('/', rateLimit({ limiter }), (_req, res) => void res.send('ok'));
    const errors: unknown[] = [];
    app.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      errors.push(err);
      res.status(500).end();
    });
    const server = await listen(app);
    try {
      const answer = await fetch(`${server.url}/`, { headers: { 'x-forwarded-for': '203.0.113.9' } });
      expect(answer.status).toBe(500);
      expect(String(errors[0])).toMatch(/trust proxy/);
      expect(await limiter.get('203.0.113.9')).toBeUndefined();
      // With a key of its own, the setting does not matter.
      const keyed = express();
      keyed.set('trust proxy', true);
      keyed.get('/', rateLimit({ limiter, key: () => 'user-1' }), (_req, res) => void res.send('ok'));
      const other = await listen(keyed);
      try {
        expect((await fetch(`${other.url}/`)).status).toBe(200);
      } finally {
        await other.close();
      }
    } finally {
      await server.close();
    }
  });

  it('refuses unknown and bad options by name', () => {
    const limiter = twoLimits(target.store(), new FakeClock(T0));
    expect(() => rateLimit({ limiter, skipp: () => true } as never)).toThrow(/skipp/);
    expect(() => rateLimit({ limiter, onStoreError: 'ignore' } as never)).toThrow(/onStoreError/);
  });
});

describe('when the store fails (a Redis that never answers)', () => {
  for (const onStoreError of ['pass', 'fail'] as const) {
    it(`onStoreError '${onStoreError}'`, async () => {
      const silent = await silentServer();
      const client = new Redis({
        port: silent.port,
        host: '127.0.0.1',
        lazyConnect: true,
        maxRetriesPerRequest: 0,
      });
      client.on('error', () => {});
      const limiter = createLimiter({
        store: createRedisStore({ client, prefix, timeout: 200 }),
        algorithm: 'fixed-window',
        limit: 1,
        window: '1m',
      });
      const app = express();
      app.use(rateLimit({ limiter, onStoreError }));
      let errors = 0;
      app.get('/', (_req, res) => {
        res.send('ok');
      });
      app.use(
        (
          err: { code?: string },
          _req: express.Request,
          res: express.Response,
          _next: express.NextFunction,
        ) => {
          errors++;
          res.status(503).send(err.code);
        },
      );
      const server = await listen(app);
      try {
        const res = await fetch(server.url);
        if (onStoreError === 'pass') {
          expect(res.status).toBe(200);
          expect(res.headers.get('ratelimit')).toBeNull();
        } else {
          expect(res.status).toBe(503);
          expect(await res.text()).toBe('ERR_STORE');
          expect(errors).toBe(1);
        }
      } finally {
        await server.close();
        client.disconnect();
        await silent.close();
      }
    });
  }
});

describe('4 processes, each an Express server on one Redis (rateLimit; express-rate-limit on OnceflowStore)', () => {
  const worker = fileURLToPath(new URL('./fixtures/express-worker.mjs', import.meta.url));
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const LIMIT = 40;

  it('admit exactly the limit between them', async () => {
    const children: ChildProcess[] = [];
    try {
      const config = JSON.stringify({ url: REDIS_URL, prefix: `${prefix}workers:`, limit: LIMIT, at: T0 });
      const urls = await Promise.all(
        Array.from({ length: 4 }, async () => {
          const child = spawn(process.execPath, [worker, config], {
            cwd: root,
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          children.push(child);
          const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
          const [line] = (await once(lines, 'line')) as [string];
          return (JSON.parse(line) as { url: string }).url;
        }),
      );
      // Per route: 200 requests, 16 at a time, round-robin over the 4 servers.
      for (const path of ['/a', '/b']) {
        let next = 0;
        const statuses: number[] = [];
        await Promise.all(
          Array.from({ length: 16 }, async () => {
            while (next < 200) {
              const i = next++;
              const res = await fetch(`${urls[i % 4]}${path}`);
              await res.arrayBuffer();
              statuses.push(res.status);
            }
          }),
        );
        expect(
          statuses.filter((s) => s === 200),
          path,
        ).toHaveLength(LIMIT);
        expect(
          statuses.filter((s) => s === 429),
          path,
        ).toHaveLength(200 - LIMIT);
      }
    } finally {
      for (const child of children) child.kill();
    }
  });
});
