// The cases of express-rate-limit's own store tests (test/library/memory-store-test.ts and the
// external stores' test: increment, decrement, no decrement below zero, reset, reset all, window
// expiry, and the middleware over HTTP), as one table: test/integration/express-store.test.ts
// runs it on the memory store and Redis, postgres-express-store.test.ts on PostgreSQL.
import express from 'express';
import { type Store as ErlStore, rateLimit as expressRateLimit, type Options } from 'express-rate-limit';
import { describe, expect, it } from 'vitest';
import type { FakeClock } from '../../src/core/clock.js';
import { OnceflowStore } from '../../src/express/index.js';
import type { Store } from '../../src/store/store.js';
import { listen } from './express-app.js';

const MINUTE = 60_000;
// A window start (a multiple of every window used here), so a case sits exactly on its edges.
export const T0 = 1_800_000_000_000 - (1_800_000_000_000 % (60 * MINUTE));

export interface Target {
  name: string;
  /** A fresh store (one key space per call) and the clock its counts are taken on. */
  make(): { store: Store; clock: FakeClock; passClock: boolean; name?: string };
}

function storeOn(target: Target, windowMs = MINUTE, name?: string) {
  const made = target.make();
  const { store, clock, passClock } = made;
  const given = name ?? made.name;
  const erl = new OnceflowStore({
    store,
    ...(passClock ? { clock } : {}),
    ...(given ? { name: given } : {}),
  });
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
    'concurrent decrements stop at zero exactly',
    async (t) => {
      const { erl } = storeOn(t);
      await Promise.all(Array.from({ length: 20 }, () => erl.increment('k')));
      expect((await erl.get('k'))?.totalHits).toBe(20);
      await Promise.all(Array.from({ length: 15 }, () => erl.decrement('k')));
      expect((await erl.get('k'))?.totalHits).toBe(5);
      await Promise.all(Array.from({ length: 10 }, () => erl.decrement('k')));
      expect((await erl.get('k'))?.totalHits).toBe(0);
      expect((await erl.increment('k')).totalHits).toBe(1);
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

/** Registers the whole table for `target`. */
export function storeSuite(target: Target): void {
  describe(`OnceflowStore on the ${target.name} store`, () => {
    it.each(CASES)('%s', async (_name, body) => body(target));

    it('is an express-rate-limit Store, shared across instances (localKeys false)', () => {
      const { erl } = storeOn(target);
      const typed: ErlStore = erl;
      expect(typed.localKeys).toBe(false);
      expect(typed.prefix).toMatch(/^(express-rate-limit|case-\d+)$/);
    });

    it('behind express-rate-limit over HTTP: limit 3, then 429', async () => {
      const { erl } = storeOn(target);
      const app = express();
      app.use(expressRateLimit({ windowMs: MINUTE, limit: 3, store: erl }));
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
        expressRateLimit({
          windowMs: MINUTE,
          limit: 2,
          store: erl,
          skipFailedRequests: true,
        }),
      );
      app.get('/fail', (_req, res) => {
        res.status(500).send('no');
      });
      app.get('/', (_req, res) => {
        res.send('ok');
      });
      const server = await listen(app);
      try {
        // express-rate-limit takes the hit back once the response has finished, after the client
        // has it: each failure's decrement is awaited before the next request.
        const settled = async (hits = 0) => {
          for (let i = 0; i < 500 && ((await erl.get('127.0.0.1')) ?? { totalHits: 0 }).totalHits > hits; i++)
            await new Promise((r) => setTimeout(r, 10));
        };
        for (let i = 0; i < 5; i++) {
          expect((await fetch(`${server.url}/fail`)).status).toBe(500);
          await settled();
        }
        expect((await erl.get('127.0.0.1'))?.totalHits).toBe(0);
        expect((await fetch(`${server.url}/`)).status).toBe(200);
        expect((await fetch(`${server.url}/`)).status).toBe(200);
        expect((await fetch(`${server.url}/`)).status).toBe(429);
        // The 429 is a failed request too: taken back, the count is the two admitted.
        await settled(2);
        expect((await erl.get('127.0.0.1'))?.totalHits).toBe(2);
      } finally {
        await server.close();
      }
    });
  });
}
