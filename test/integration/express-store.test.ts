// express-rate-limit's store cases (test/support/express-store-cases.ts) against OnceflowStore on
// the memory store and on Redis, and the middleware's passOnStoreError and skip when the store fails.
import express from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import { OnceflowStore } from '../../src/express/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { listen } from '../support/express-app.js';
import { storeSuite, T0, type Target } from '../support/express-store-cases.js';
import { silentServer } from '../support/silent-server.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const MINUTE = 60_000;
const redis = new Redis(REDIS_URL);
const prefix = runPrefix('express-store');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

let run = 0;
const TARGETS: Target[] = [
  {
    name: 'memory',
    make: () => {
      const clock = new FakeClock(T0);
      return { store: memoryStore({ clock }), clock, passClock: false };
    },
  },
  {
    name: 'redis',
    make: () => ({
      store: createRedisStore({ client: redis, prefix: `${prefix}${run++}:` }),
      clock: new FakeClock(T0),
      passClock: true,
    }),
  },
];

for (const target of TARGETS) storeSuite(target);

describe('a store that fails (Redis that never answers)', () => {
  // express-rate-limit logs each store error to the console: expected here.
  vi.spyOn(console, 'error').mockImplementation(() => {});
  for (const passOnStoreError of [true, false]) {
    it(`passOnStoreError ${passOnStoreError}: ${passOnStoreError ? 'the request goes through' : 'a 500'}`, async () => {
      const silent = await silentServer();
      const client = new Redis({
        port: silent.port,
        host: '127.0.0.1',
        lazyConnect: true,
        maxRetriesPerRequest: 0,
      });
      client.on('error', () => {});
      const erl = new OnceflowStore({ store: createRedisStore({ client, prefix, timeout: 200 }) });
      const app = express();
      app.use(expressRateLimit({ windowMs: MINUTE, limit: 1, store: erl, passOnStoreError }));
      app.get('/', (_req, res) => {
        res.send('ok');
      });
      const server = await listen(app);
      try {
        const res = await fetch(`${server.url}/`);
        expect(res.status).toBe(passOnStoreError ? 200 : 500);
        if (passOnStoreError) expect((await fetch(`${server.url}/`)).status).toBe(200);
      } finally {
        await server.close();
        client.disconnect();
        await silent.close();
      }
    });
  }

  it('skip: a skipped request never reaches the (failing) store', async () => {
    const silent = await silentServer();
    const client = new Redis({
      port: silent.port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
    });
    client.on('error', () => {});
    const erl = new OnceflowStore({ store: createRedisStore({ client, prefix, timeout: 200 }) });
    const app = express();
    app.use(
      expressRateLimit({
        windowMs: MINUTE,
        limit: 1,
        store: erl,
        skip: (req) => req.path === '/health',
      }),
    );
    app.get('/health', (_req, res) => {
      res.send('ok');
    });
    app.get('/', (_req, res) => {
      res.send('ok');
    });
    const server = await listen(app);
    try {
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      expect((await fetch(`${server.url}/`)).status).toBe(500);
    } finally {
      await server.close();
      client.disconnect();
      await silent.close();
    }
  });
});
