// onceflow's store for @fastify/rate-limit, table-driven over the memory store and Redis (and
// PostgreSQL: postgres-fastify-store.test.ts): the cases @fastify/rate-limit's own store tests
// define (test/support/fastify-store-cases.ts), then the plugin itself over real HTTP, and the
// count exact across 4 processes sharing one Redis.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import fastifyRateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/core/errors.js';
import { rateLimitStore } from '../../src/fastify/index.js';
import { FakeClock, memoryStore } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { CASES, type Ctor, T0, W } from '../support/fastify-store-cases.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const redis = new Redis(REDIS_URL);
const prefix = runPrefix('fastify-store');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

interface Backend {
  readonly name: string;
  /** A store on this backend whose limiter time is `clock`'s, fresh for each case. */
  store(clock: FakeClock): Store;
  /** A store on this backend whose every operation fails. */
  broken(): Store;
}

let n = 0;
const BACKENDS: Backend[] = [
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
      // A client that is closed: every command is refused at once ("Connection is closed").
      const gone = new Redis(REDIS_URL, { lazyConnect: true });
      gone.disconnect();
      return createRedisStore({ client: gone, prefix, timeout: '2s' });
    },
  },
];

async function serve(options: Record<string, unknown>) {
  const app = Fastify();
  await app.register(fastifyRateLimit, options);
  app.get('/', async () => 'hello!');
  app.get('/own', { config: { rateLimit: { max: 1, timeWindow: W } } }, async () => 'own');
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url };
}

for (const backend of BACKENDS) {
  describe(`rateLimitStore on ${backend.name}`, () => {
    for (const c of CASES) {
      it(c.name, async () => {
        const clock = new FakeClock(T0);
        const store = backend.store(clock);
        await c.run({ make: () => rateLimitStore({ store, clock, name: `case-${++n}` }) as Ctor, clock });
      });
    }

    it('through @fastify/rate-limit over HTTP: headers, 429, a route of its own, window end', async () => {
      const clock = new FakeClock(T0);
      const store = rateLimitStore({ store: backend.store(clock), clock, name: `http-${++n}` });
      const { app, url } = await serve({ max: 2, timeWindow: W, store });
      try {
        const codes: number[] = [];
        let last: Response | undefined;
        for (let i = 0; i < 3; i++) {
          last = await fetch(`${url}/`);
          codes.push(last.status);
        }
        expect(codes).toEqual([200, 200, 429]);
        expect(last?.headers.get('x-ratelimit-limit')).toBe('2');
        expect(last?.headers.get('x-ratelimit-remaining')).toBe('0');
        expect(last?.headers.get('retry-after')).toBe('1');
        // The route with its own config counts apart (its child store).
        expect((await fetch(`${url}/own`)).status).toBe(200);
        expect((await fetch(`${url}/own`)).status).toBe(429);
        clock.advance(W);
        const next = await fetch(`${url}/`);
        expect(next.status).toBe(200);
        expect(next.headers.get('x-ratelimit-remaining')).toBe('1');
      } finally {
        await app.close();
      }
    });

    it('two limiters of createRateLimit() with one timeWindow count apart', async () => {
      const clock = new FakeClock(T0);
      const store = rateLimitStore({ store: backend.store(clock), clock, name: `limiters-${++n}` });
      const app = Fastify();
      try {
        await app.register(fastifyRateLimit, { global: false, store });
        const login = app.createRateLimit({ max: 2, timeWindow: W });
        const signup = app.createRateLimit({ max: 2, timeWindow: W });
        await app.ready();
        const request = { ip: '203.0.113.9', routeOptions: { config: {} } } as never;
        expect(await login(request)).toMatchObject({ remaining: 1, isExceeded: false });
        expect(await login(request)).toMatchObject({ remaining: 0, isExceeded: false });
        expect(await login(request)).toMatchObject({ remaining: 0, isExceeded: true });
        // The other limiter has its own counter: nothing of the three hits above.
        expect(await signup(request)).toMatchObject({ remaining: 1, isExceeded: false });
      } finally {
        await app.close();
      }
    });

    for (const skipOnError of [true, false]) {
      it(`a store error with skipOnError: ${skipOnError} ${skipOnError ? 'lets the request through' : 'is a 500'}`, async () => {
        const store = rateLimitStore({ store: backend.broken() });
        const { app, url } = await serve({ max: 2, timeWindow: W, store, skipOnError });
        try {
          const res = await fetch(`${url}/`);
          expect(res.status).toBe(skipOnError ? 200 : 500);
          if (skipOnError) expect(res.headers.get('x-ratelimit-remaining')).toBe('2');
        } finally {
          await app.close();
        }
      });
    }
  });
}

describe('rateLimitStore across 4 processes on one Redis', () => {
  const run = promisify(execFile);
  const worker = fileURLToPath(new URL('./fixtures/fastify-store-worker.mjs', import.meta.url));
  const root = fileURLToPath(new URL('../..', import.meta.url));

  it('counts every hit exactly once: the currents are 1..N with no gap and no repeat', async () => {
    const config = { url: REDIS_URL, prefix: `${prefix}workers:`, timeWindow: 3_600_000, lanes: 8, hits: 25 };
    // A window an hour long: every hit of the run falls in one window unless the run straddles
    // an hour's edge, which the check below tells apart (two runs of 1..k).
    const outputs = await Promise.all(
      Array.from({ length: 4 }, () =>
        run(process.execPath, [worker, JSON.stringify(config)], { cwd: root, timeout: 60_000 }),
      ),
    );
    const currents = outputs.flatMap((o) => JSON.parse(o.stdout) as number[]).sort((a, b) => a - b);
    const total = 4 * config.lanes * config.hits;
    expect(currents).toHaveLength(total);
    // Each hit got its own count: 1..total, or (a run across an hour's edge) 1..a then 1..b,
    // each count at most once per window.
    const seen = new Map<number, number>();
    for (const c of currents) seen.set(c, (seen.get(c) ?? 0) + 1);
    const windows = seen.get(1) ?? 0;
    expect(windows === 1 || windows === 2).toBe(true);
    for (const [c, times] of seen)
      expect(times, `current ${c}`).toBeLessThanOrEqual(seen.get(c - 1) ?? windows);
    if (windows === 1) expect(currents).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  });
});
