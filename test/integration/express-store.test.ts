// The cases express-rate-limit's own store tests define (test/library/memory-store-test.ts and
// the external stores' test: increment, decrement, no decrement below zero, reset, reset all,
// window expiry, and the middleware's passOnStoreError), as one table run against each onceflow
// store behind OnceflowStore: the memory store and Redis.
import express from 'express';
import { type Store as ErlStore, rateLimit as expressRateLimit, type Options } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import { OnceflowStore } from '../../src/express/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { listen } from '../support/express-app.js';
import { silentServer } from '../support/silent-server.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const MINUTE = 60_000;
// A window start (a multiple of every window used here), so a case sits exactly on its edges.
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % (60 * MINUTE));

const redis = new Redis(REDIS_URL);
const prefix = runPrefix('express-store');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

interface Target {
  name: string;
  /** A fresh store (one key space per call) and the clock its counts are taken on. */
  make(): { store: Store; clock: FakeClock; passClock: boolean };
}

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

function storeOn(target: Target, windowMs = MINUTE, name?: string) {
  const { store, clock, passClock } = target.make();
  const erl = new OnceflowStore({ store, ...(passClock ? { clock } : {}), ...(name ? { name } : {}) });
  erl.init({ windowMs } as Options);
  return { erl, clock, store };
}

type Case = [name: string, body: (target: Target) => Promise<void>];

const CASES: Case[] = [
  [
    'sets the value to 1 on the first increment',
    async (t) => {
      const { erl } = storeOn(t);
      expect((await erl.increment('k')).totalHits).toBe(1);
    },
  ],
  [
    'increments the key',
    async (t) => {
      const { erl } = storeOn(t);
      await erl.increment('k');
      expect((await erl.increment('k')).totalHits).toBe(2);
    },
  ],
  [
    'decrements the key',
    async (t) => {
      const { erl } = storeOn(t);
      await erl.increment('k');
      await erl.increment('k');
      await erl.decrement('k');
      expect((await erl.increment('k')).totalHits).toBe(2);
    },
  ],
  [
    'never decrements below zero',
    async (t) => {
      const { erl } = storeOn(t);
      await erl.decrement('k');
      expect(await erl.get('k')).toBeUndefined();
      await erl.increment('k');
      await erl.decrement('k');
      await erl.decrement('k');
      await erl.decrement('k');
      expect((await erl.increment('k')).totalHits).toBe(1);
      expect((await erl.increment('k')).totalHits).toBe(2);
    },
  ],
  [
    'resets one key',
    async (t) => {
      const { erl } = storeOn(t);
      await erl.increment('k');
      await erl.increment('other');
      await erl.resetKey('k');
      expect((await erl.increment('k')).totalHits).toBe(1);
      expect((await erl.increment('other')).totalHits).toBe(2);
    },
  ],
  [
    'resets every key of its name, and no other name',
    async (t) => {
      const { store, clock, passClock } = t.make();
      const one = new OnceflowStore({ store, name: 'one', ...(passClock ? { clock } : {}) });
      const two = new OnceflowStore({ store, name: 'two', ...(passClock ? { clock } : {}) });
      await one.increment('a');
      await one.increment('b');
      await two.increment('a');
      await one.resetAll();
      expect((await one.increment('a')).totalHits).toBe(1);
      expect((await one.increment('b')).totalHits).toBe(1);
      expect((await two.increment('a')).totalHits).toBe(2);
    },
  ],
  [
    'starts over when the window ends, and not a millisecond before',
    async (t) => {
      const { erl, clock } = storeOn(t, 50);
      await erl.increment('k');
      await erl.increment('k');
      clock.advance(49);
      const last = await erl.increment('k');
      expect(last.totalHits).toBe(3);
      expect(last.resetTime?.getTime()).toBe(T0 + 50);
      clock.advance(1);
      const next = await erl.increment('k');
      expect(next.totalHits).toBe(1);
      expect(next.resetTime?.getTime()).toBe(T0 + 100);
    },
  ],
  [
    'gets hits and the reset time without counting',
    async (t) => {
      const { erl, clock } = storeOn(t);
      expect(await erl.get('k')).toBeUndefined();
      clock.advance(1234);
      await erl.increment('k');
      expect(await erl.get('k')).toEqual({ totalHits: 1, resetTime: new Date(T0 + MINUTE) });
      expect(await erl.get('k')).toEqual({ totalHits: 1, resetTime: new Date(T0 + MINUTE) });
    },
  ],
  [
    'counts every hit past any limit (express-rate-limit decides)',
    async (t) => {
      const { erl } = storeOn(t);
      for (let i = 1; i <= 50; i++) expect((await erl.increment('k')).totalHits).toBe(i);
    },
  ],
  [
    'refuses a bad key with a typed error, counting nothing',
    async (t) => {
      const { erl } = storeOn(t);
      await expect(erl.increment('')).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path: 'key' });
      await expect(erl.increment('x'.repeat(513))).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    },
  ],
];

describe.each(TARGETS)('OnceflowStore on the $name store', (target) => {
  it.each(CASES)('%s', async (_name, body) => body(target));

  it('is an express-rate-limit Store, shared across instances (localKeys false)', () => {
    const { erl } = storeOn(target);
    const typed: ErlStore = erl;
    expect(typed.localKeys).toBe(false);
    expect(typed.prefix).toBe('express-rate-limit');
  });

  it('behind express-rate-limit over HTTP: limit 3, then 429', async () => {
    const { erl } = storeOn(target);
    const app = express();
    app.use(expressRateLimit({ windowMs: MINUTE, limit: 3, store: erl, validate: false }));
    app.get('/', (_req, res) => {
      res.send('ok');
    });
    const server = await listen(app);
    try {
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${server.url}/`)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await server.close();
    }
  });

  it('takes hits back with skipFailedRequests (decrement over HTTP)', async () => {
    const { erl } = storeOn(target);
    const app = express();
    app.use(
      expressRateLimit({ windowMs: MINUTE, limit: 2, store: erl, skipFailedRequests: true, validate: false }),
    );
    app.get('/fail', (_req, res) => {
      res.status(500).send('no');
    });
    app.get('/', (_req, res) => {
      res.send('ok');
    });
    const server = await listen(app);
    try {
      for (let i = 0; i < 5; i++) expect((await fetch(`${server.url}/fail`)).status).toBe(500);
      // The decrement runs on the response's finish: wait until it is seen.
      for (let i = 0; i < 100 && ((await erl.get('127.0.0.1')) ?? { totalHits: 0 }).totalHits > 0; i++)
        await new Promise((r) => setTimeout(r, 20));
      expect(await erl.get('127.0.0.1')).toMatchObject({ totalHits: 0 });
      expect((await fetch(`${server.url}/`)).status).toBe(200);
      expect((await fetch(`${server.url}/`)).status).toBe(200);
      expect((await fetch(`${server.url}/`)).status).toBe(429);
    } finally {
      await server.close();
    }
  });
});

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
      app.use(
        expressRateLimit({ windowMs: MINUTE, limit: 1, store: erl, passOnStoreError, validate: false }),
      );
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
        validate: false,
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
