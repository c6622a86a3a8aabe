// @fastify/rate-limit's own store cases (incr counting, ttl, a child per route, window expiry,
// refusals), as one table every onceflow store runs: test/integration/fastify-store.test.ts
// (memory, Redis) and postgres-fastify-store.test.ts.
import { expect } from 'vitest';
import type { FakeClock } from '../../src/core/clock.js';
import type { OnceflowRateLimitStore } from '../../src/fastify/index.js';

/** The window of the cases, ms. */
export const W = 1_000;
/** An instant on a window edge (windows are aligned on multiples of their length). */
export const T0 = 1_800_000_000_000;

type Result = { current: number; ttl: number };
type Hit = (key: string, timeWindow?: number) => Promise<Result>;
const promised =
  (store: OnceflowRateLimitStore, method: 'incr' | 'read'): Hit =>
  (key, timeWindow = W) =>
    new Promise((resolve, reject) =>
      store[method](key, (err, res) => (err ? reject(err) : resolve(res as Result)), timeWindow, 2),
    );
export type Ctor = new (options: object) => OnceflowRateLimitStore;

export interface Case {
  name: string;
  run(t: { make: () => Ctor; clock: FakeClock }): Promise<void>;
}

export const CASES: Case[] = [
  {
    name: 'incr counts every hit of a key, past max too',
    async run({ make }) {
      const incr = promised(new (make())({}), 'incr');
      const currents: number[] = [];
      for (let i = 0; i < 5; i++) currents.push((await incr('10.0.0.1')).current);
      expect(currents).toEqual([1, 2, 3, 4, 5]);
      expect((await incr('10.0.0.2')).current).toBe(1);
    },
  },
  {
    name: 'ttl is the time left to the window end',
    async run({ make, clock }) {
      const incr = promised(new (make())({}), 'incr');
      expect(await incr('k')).toEqual({ current: 1, ttl: W });
      clock.advance(300);
      expect(await incr('k')).toEqual({ current: 2, ttl: W - 300 });
      clock.advance(699);
      expect(await incr('k')).toEqual({ current: 3, ttl: 1 });
    },
  },
  {
    name: 'the window expires: the next hit counts from 1 again',
    async run({ make, clock }) {
      const incr = promised(new (make())({}), 'incr');
      await incr('k');
      await incr('k');
      await incr('k');
      clock.advance(W);
      expect(await incr('k')).toEqual({ current: 1, ttl: W });
    },
  },
  {
    name: 'a child counts per route, apart from its parent and from other routes',
    async run({ make }) {
      const parent = new (make())({});
      const child = (url: string) =>
        parent.child({ routeInfo: { method: 'GET', url } } as never) as OnceflowRateLimitStore;
      const a = child('/a');
      const b = child('/b');
      const again = child('/a');
      await promised(a, 'incr')('k');
      await promised(a, 'incr')('k');
      expect((await promised(again, 'incr')('k')).current).toBe(3);
      expect((await promised(b, 'incr')('k')).current).toBe(1);
      expect((await promised(parent, 'incr')('k')).current).toBe(1);
    },
  },
  {
    name: 'read reports without counting (createRateLimit with increment: false)',
    async run({ make }) {
      const store = new (make())({});
      expect(await promised(store, 'read')('k')).toEqual({ current: 0, ttl: 0 });
      await promised(store, 'incr')('k');
      expect(await promised(store, 'read')('k')).toEqual({ current: 1, ttl: W });
      expect(await promised(store, 'read')('k')).toEqual({ current: 1, ttl: W });
    },
  },
  {
    name: 'a different timeWindow is a counter of its own',
    async run({ make }) {
      const incr = promised(new (make())({}), 'incr');
      await incr('k', W);
      expect(await incr('k', 2 * W)).toEqual({ current: 1, ttl: 2 * W });
    },
  },
  {
    name: 'a bad timeWindow or key is an error to the callback, nothing counted',
    async run({ make }) {
      const incr = promised(new (make())({}), 'incr');
      await expect(incr('k', 0)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
      await expect(incr('x'.repeat(513))).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
      expect((await incr('k')).current).toBe(1);
    },
  },
  {
    name: 'continueExceeding and exponentialBackoff are refused, not ignored',
    async run({ make }) {
      const Store = make();
      expect(() => new Store({ continueExceeding: true })).toThrow(/continueExceeding/);
      expect(() => new Store({}).child({ exponentialBackoff: true, routeInfo: {} } as never)).toThrow(
        /exponentialBackoff/,
      );
    },
  },
];
