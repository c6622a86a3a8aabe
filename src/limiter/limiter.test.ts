import { describe, expect, it } from 'vitest';
import { inProcessSpy } from '../../test/support/in-process.js';
import { thrown } from '../../test/support/thrown.js';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError, StoreError } from '../core/errors.js';
import { createLedger } from '../ledger/ledger.js';
import { VersionGate } from '../ordering/version-gate.js';
import type { LimitCall, LimiterTakeCommand, LimiterTakeReply } from '../store/limiter.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { wrapStore } from '../testing/wrap-store.js';
import type { LimitSpec } from '../windows/limits/types.js';
import { rateLimitHeaders } from './headers.js';
import { createLimiter, type LimiterOptions } from './limiter.js';

const fixture = (options: Omit<LimiterOptions, 'store' | 'clock'>, start = 0) => {
  const clock = new FakeClock(start);
  const store = memoryStore({ clock });
  return { clock, store, limiter: createLimiter({ ...options, store, clock }) };
};

/** A memory store that counts limiter calls and can be told to fail or hang. */
function spyStore(clock: FakeClock) {
  const inner = memoryStore({ clock });
  const state = { calls: 0, mode: 'ok' as 'ok' | 'fail' | 'hang' };
  // Wrapped, so every decision goes through the spied limiterTake (no in-process path).
  const store = wrapStore(inner, {
    kind: 'spy',
    limiterTake(cmd: LimiterTakeCommand) {
      state.calls++;
      if (state.mode === 'fail') return Promise.reject(new Error('connection refused'));
      if (state.mode === 'hang') return new Promise(() => {});
      return inner.limiterTake!(cmd);
    },
  });
  return { store, state };
}

describe('createLimiter', () => {
  for (const algorithm of ['sliding-log', 'sliding-window', 'fixed-window', 'gcra'] as const) {
    it(`${algorithm}: a refused request consumes nothing (cost 8, then 5 against 10)`, async () => {
      const { limiter } = fixture({ algorithm, limit: 10, window: '1s' });
      expect((await limiter.take('u', { cost: 8 })).remaining).toBe(2);
      const refused = await limiter.take('u', { cost: 5 });
      expect(refused).toMatchObject({ allowed: false, remaining: 2, reason: 'limited', limit: 10 });
      expect(refused.retryAfterMs).toBeGreaterThan(0);
      const fits = await limiter.take('u', { cost: 2 });
      expect(fits).toMatchObject({ allowed: true, remaining: 0 });
    });
  }

  it('sliding-log counts two requests in the same millisecond as two', async () => {
    const { limiter } = fixture({ algorithm: 'sliding-log', limit: 2, window: '1s' });
    expect((await limiter.take('u')).allowed).toBe(true);
    expect((await limiter.take('u')).allowed).toBe(true);
    expect((await limiter.take('u')).allowed).toBe(false);
  });

  it('gcra: rate plus burst, with an exact retry for a non-integer interval (3 per second)', async () => {
    const { limiter, clock } = fixture({ algorithm: 'gcra', limit: 3, window: '1s', burst: 1 });
    expect((await limiter.take('u')).allowed).toBe(true);
    const r = await limiter.take('u');
    expect(r.retryAfterMs).toBe(334); // T = 333.33 ms: 333 is too early, 334 enough
    clock.advance(333);
    expect((await limiter.take('u')).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.take('u')).allowed).toBe(true);
  });

  it('a cost above the limit never passes: Infinity, reason cost-exceeds-limit', async () => {
    const { limiter } = fixture({ algorithm: 'fixed-window', limit: 3, window: '1s' });
    const r = await limiter.take('u', { cost: 4 });
    expect(r).toMatchObject({
      allowed: false,
      reason: 'cost-exceeds-limit',
      retryAfterMs: Number.POSITIVE_INFINITY,
    });
  });

  it('multi-limit: 20/s and 600/min per user and 100/s per IP, all or nothing, bound named', async () => {
    const { limiter, clock } = fixture({
      limits: [
        { id: 'user/s', algorithm: 'gcra', limit: 20, window: '1s', by: 'user' },
        {
          id: 'user/min',
          algorithm: 'sliding-window',
          limit: 600,
          window: '1m',
          granularity: '1s',
          by: 'user',
        },
        { id: 'ip/s', algorithm: 'sliding-log', limit: 100, window: '1s', by: 'ip' },
      ],
    });
    // Six users behind one IP: the IP limit binds first.
    let refused = 0;
    for (let i = 0; i < 120; i++) {
      const r = await limiter.take({ user: `u${i % 6}`, ip: '10.0.0.1' });
      if (!r.allowed) {
        refused++;
        expect(r.bound).toBe('ip/s');
      }
    }
    expect(refused).toBe(20);
    // Refusals charged nothing: the users' per-second budgets still show 20 - 17 or 20 - 16.
    const r = await limiter.take({ user: 'u0', ip: '10.0.0.2' });
    expect(r.limits.find((p) => p.id === 'user/s')?.remaining).toBe(2);
    clock.advance(1000);
    // One user alone: its per-second limit binds.
    for (let i = 0; i < 20; i++) await limiter.take({ user: 'solo', ip: `10.0.1.${i}` });
    expect(await limiter.take({ user: 'solo', ip: '10.0.2.1' })).toMatchObject({
      allowed: false,
      bound: 'user/s',
    });
  });

  it('the block cache refuses a blocked key until its retry time without a store call', async () => {
    const clock = new FakeClock(0);
    const { store, state } = spyStore(clock);
    const limiter = createLimiter({ store, clock, algorithm: 'fixed-window', limit: 1, window: '1s' });
    await limiter.take('u');
    const first = await limiter.take('u');
    expect(first.reason).toBe('limited');
    const calls = state.calls;
    const blocked = await limiter.take('u');
    expect(blocked).toMatchObject({ allowed: false, reason: 'blocked', retryAfterMs: 1000 });
    expect(state.calls).toBe(calls);
    clock.advance(999);
    expect((await limiter.take('u')).retryAfterMs).toBe(1);
    expect(state.calls).toBe(calls);
    clock.advance(1);
    expect((await limiter.take('u')).allowed).toBe(true);
    expect(state.calls).toBe(calls + 1);
  });

  it("what a caller does to a refused decision never changes the block cache's later answers", async () => {
    const { limiter } = fixture({ algorithm: 'fixed-window', limit: 1, window: '1m' });
    await limiter.take('u');
    const refused = await limiter.take('u');
    expect(refused.reason).toBe('limited');
    Object.assign(refused, { allowed: true, retryAfterMs: 0 });
    Object.assign(refused.limits[0] as object, { remaining: 99, allowed: true });
    const blocked = await limiter.take('u');
    expect(blocked).toMatchObject({ allowed: false, reason: 'blocked', retryAfterMs: 60_000 });
    expect(blocked.limits[0]).toMatchObject({ allowed: false, remaining: 0 });
    Object.assign(blocked.limits[0] as object, { remaining: 42 });
    expect((await limiter.take('u')).limits[0]?.remaining).toBe(0);
  });

  it('the block cache lets a smaller cost through to the store, and is a bounded LRU', async () => {
    const clock = new FakeClock(0);
    const { store, state } = spyStore(clock);
    const limiter = createLimiter({
      store,
      clock,
      algorithm: 'sliding-log',
      limit: 5,
      window: '1s',
      blockCache: { max: 2 },
    });
    await limiter.take('u', { cost: 3 });
    expect((await limiter.take('u', { cost: 3 })).reason).toBe('limited');
    expect((await limiter.take('u', { cost: 2 })).allowed).toBe(true);
    for (const k of ['a', 'b', 'c']) {
      await limiter.take(k, { cost: 5 });
      await limiter.take(k);
    }
    const before = state.calls;
    await limiter.take('a'); // evicted from the cache of 2: asks the store again
    expect(state.calls).toBe(before + 1);
    await limiter.take('c');
    expect(state.calls).toBe(before + 1);
  });

  it('the block cache keeps the store time: a memory store on a fake clock, no limiter clock', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      algorithm: 'fixed-window',
      limit: 1,
      window: '1s',
    });
    expect((await limiter.take('u')).allowed).toBe(true);
    expect(await limiter.take('u')).toMatchObject({ allowed: false, reason: 'limited', retryAfterMs: 1000 });
    // No block on the wall clock in front of a store on its own clock: the store answers.
    expect(await limiter.take('u')).toMatchObject({ allowed: false, reason: 'limited', retryAfterMs: 1000 });
    clock.advance(1000);
    expect((await limiter.take('u')).allowed).toBe(true);
  });

  it('an admission forgets the key block: a blocked answer waits as long as the store says, not an older wait', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock, // the block cache sits in front of a memory store when both keep this time
      algorithm: 'sliding-log',
      limit: 3,
      window: '1s',
    });
    await limiter.take('u');
    clock.advance(100);
    await limiter.take('u');
    clock.advance(400); // t = 500: 2 of 3 used
    expect(await limiter.take('u', { cost: 2 })).toMatchObject({
      allowed: false,
      reason: 'limited',
      retryAfterMs: 500,
    });
    expect((await limiter.take('u', { cost: 1 })).allowed).toBe(true); // now 3 of 3: cost 2 needs until t = 1100
    const again = await limiter.take('u', { cost: 2 });
    expect(again).toMatchObject({ allowed: false, reason: 'limited', retryAfterMs: 600 });
    clock.advance(599);
    expect((await limiter.take('u', { cost: 2 })).allowed).toBe(false);
    clock.advance(1);
    expect((await limiter.take('u', { cost: 2 })).allowed).toBe(true);
  });

  it('degraded local: a share below one request of some limit is refused by name (nodes together would exceed it)', () => {
    const make =
      (limit: number, share: number, extra = {}) =>
      () =>
        createLimiter({
          algorithm: 'gcra',
          limit,
          window: '1s',
          degraded: { mode: 'local', share },
          ...extra,
        });
    expect(make(3, 0.25)).toThrow(
      /`degraded.share` to be large enough that each node may admit at least 1 of limits\[0\]/,
    );
    expect(make(10, 0.05)).toThrow(/`degraded.share`/);
    expect(make(100, 0.5, { burst: 1 })).toThrow(/burst 1/);
    expect(make(4, 0.25)).not.toThrow();
  });

  it("degraded 'deny', 'allow' and 'local' say so in reason; default rethrows a coded StoreError", async () => {
    const clock = new FakeClock(0);
    const { store, state } = spyStore(clock);
    state.mode = 'fail';
    const base = {
      store,
      clock,
      algorithm: 'fixed-window',
      limit: 8,
      window: '1s',
      blockCache: false,
    } as const;
    await expect(createLimiter(base).take('u')).rejects.toSatisfy((e) => isOnceflowError(e, 'ERR_STORE'));
    expect(await createLimiter({ ...base, degraded: 'deny' }).take('u')).toMatchObject({
      allowed: false,
      reason: 'degraded-deny',
    });
    expect(await createLimiter({ ...base, degraded: 'allow' }).take('u')).toMatchObject({
      allowed: true,
      reason: 'degraded-allow',
    });
    const local = createLimiter({ ...base, degraded: { mode: 'local', share: 0.25 } });
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(await local.take('u'));
    expect(outcomes.map((o) => [o.allowed, o.reason, o.limit])).toEqual([
      [true, 'degraded-local', 2],
      [true, 'degraded-local', 2],
      [false, 'degraded-local', 2],
    ]);
    state.mode = 'ok';
    expect((await local.take('u')).reason).toBe('allowed');
  });

  it('a store that does not answer within the timeout counts as failed', async () => {
    const clock = new FakeClock(0);
    const { store, state } = spyStore(clock);
    state.mode = 'hang';
    const limiter = createLimiter({
      store,
      algorithm: 'gcra',
      limit: 5,
      window: '1s',
      degraded: 'deny',
      timeout: '20ms',
    });
    expect(await limiter.take('u')).toMatchObject({ allowed: false, reason: 'degraded-deny' });
    const throwing = createLimiter({ store, algorithm: 'gcra', limit: 5, window: '1s', timeout: 10 });
    const err = await throwing.take('u').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreError);
    expect(String(err)).toMatch(/no answer within 10 ms/);
  });

  it('a wrapped memory store answering through limiterTake gets the default timeout, as a remote one', async () => {
    const clock = new FakeClock(0);
    const inner = memoryStore({ clock });
    const hanging = wrapStore(inner, {
      limiterTake: () => new Promise<never>(() => {}),
    });
    expect(hanging.kind).toBe('memory');
    const limiter = createLimiter({
      store: hanging,
      algorithm: 'gcra',
      limit: 5,
      window: '1s',
      degraded: 'deny',
    });
    const started = Date.now();
    expect(await limiter.take('u')).toMatchObject({ allowed: false, reason: 'degraded-deny' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
  });

  it('rejects bad options and arguments with coded errors that name them', () => {
    const store = memoryStore();
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ algorithm: 'leaky', limit: 1, window: '1s' }, /`algorithm` to be one of/],
      [{ algorithm: 'gcra', limit: 0, window: '1s' }, /`limit` to be a positive safe integer/],
      [{ algorithm: 'gcra', limit: 1, window: '1x' }, /`window`/],
      [
        { algorithm: 'sliding-window', limit: 1, window: '1s', granularity: '300ms' },
        /`granularity` to be a positive duration that divides the window \(1000 ms\)/,
      ],
      [{ algorithm: 'fixed-window', limit: 1, window: '1s', burst: 2 }, /`burst` to be absent/],
      [
        { algorithm: 'gcra', limit: 2 ** 30, window: '1000d' },
        /`limit` to be small enough that limit x window/,
      ],
      [{ algorithm: 'gcra', limit: 1, burst: 2 ** 30, window: '1000d' }, /`burst` to be small enough/],
      [
        { algorithm: 'gcra', limit: 1, window: { kind: 'window', lengthMs: Number.NaN, granularityMs: 1 } },
        /`window.lengthMs` to be a positive whole number of ms/,
      ],
      [
        { algorithm: 'gcra', limit: 1, window: { kind: 'window', lengthMs: 1.5, granularityMs: 1.5 } },
        /`window.lengthMs`/,
      ],
      [
        {
          algorithm: 'sliding-window',
          limit: 1,
          window: { kind: 'window', lengthMs: 1000, granularityMs: 300 },
        },
        /`window.granularityMs` to be a duration that divides the window \(1000 ms\)/,
      ],
      [{ limits: [] }, /`limits` to be a non-empty array/],
      [
        {
          limits: [
            { algorithm: 'gcra', limit: 1, window: '1s', id: 'x' },
            { algorithm: 'gcra', limit: 2, window: '1s', id: 'x' },
          ],
        },
        /`limits\[1\].id` to be unique/,
      ],
      [{ algorithm: 'gcra', limit: 1, window: '1s', degraded: 'open' }, /`degraded`/],
      [
        { algorithm: 'gcra', limit: 1, window: '1s', timeout: '30d' },
        /`timeout` to be a duration of at most 2\^31 - 1 ms/,
      ],
      [
        { algorithm: 'gcra', limit: 1, window: '1s', degraded: { mode: 'local', share: 2 } },
        /`degraded.share`/,
      ],
    ];
    for (const [options, message] of bad) {
      expect(() => createLimiter({ store, ...options } as LimiterOptions)).toThrow(message);
    }
    expect(() =>
      createLimiter({ store: { kind: 'x' } as unknown as Store, algorithm: 'gcra', limit: 1, window: 1 }),
    ).toThrow(/`store`/);
  });

  it('long windows: a week of sliding-window (one bucket or daily buckets) and a year of GCRA are accepted', async () => {
    const clock = new FakeClock(0);
    const store = memoryStore({ clock });
    const weekly = createLimiter({ store, algorithm: 'sliding-window', limit: 1, window: '7d' });
    const daily = createLimiter({
      store,
      algorithm: 'sliding-window',
      limit: 100,
      window: '30d',
      granularity: '1d',
    });
    const yearly = createLimiter({ store, algorithm: 'gcra', limit: 1000, window: '365d' });
    expect((await weekly.take('k')).allowed).toBe(true);
    expect((await weekly.take('k')).allowed).toBe(false);
    expect((await daily.take('k', { cost: 100 })).remaining).toBe(0);
    expect((await yearly.take('k')).remaining).toBe(999);
  });

  it('a clock reading that is not a finite number fails that take alone, with no store call and no degrading', async () => {
    const clock = new FakeClock(0);
    const { store, state } = spyStore(clock);
    let reading: unknown = Number.NaN;
    const bad = createLimiter({
      store,
      clock: { now: () => reading as number },
      algorithm: 'gcra',
      limit: 5,
      window: '1s',
      degraded: 'allow',
    });
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, '5', 5n, 2 ** 53]) {
      reading = value;
      const err = await bad.take('u').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect(String(err)).toContain('clock.now()');
    }
    expect(state.calls).toBe(0); // refused before the store: a 'degraded: allow' never admits it
    reading = 100.75; // floored: limits work in whole milliseconds (so do Redis's TTLs)
    expect((await bad.take('u')).at).toBe(100);
  });

  it('a memory store whose own clock answers NaN fails (degraded policy), never admits everything', async () => {
    const store = memoryStore({ clock: { now: () => Number.NaN } });
    const limiter = createLimiter({ store, algorithm: 'fixed-window', limit: 1, window: '1s' });
    const err = await limiter.take('u').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isOnceflowError(err, 'ERR_STORE')).toBe(true); // the default policy, 'throw'
    const deny = createLimiter({ store, algorithm: 'sliding-log', limit: 1, window: '1s', degraded: 'deny' });
    expect(await deny.take('u')).toMatchObject({ allowed: false, reason: 'degraded-deny' });
  });

  it('a caller clock that fails is read once per take, before anything: that take rejects, never throws', async () => {
    let reads = 0;
    const clock = {
      now: () => {
        if (++reads === 3) throw new Error('clock gone');
        return 0;
      },
    };
    const limiter = createLimiter({
      store: memoryStore({ clock: new FakeClock(0) }),
      clock,
      algorithm: 'fixed-window',
      limit: 1,
      window: '1s',
    });
    await limiter.take('u');
    expect(await limiter.take('u')).toMatchObject({ allowed: false, reason: 'limited' });
    let pending: Promise<unknown> | undefined;
    expect(() => {
      pending = limiter.take('u');
    }).not.toThrow();
    await expect(pending).rejects.toThrow('clock gone');
    expect(reads).toBe(3);
  });

  it('an in-process store answering no decision: the degraded policy decides, take never throws', async () => {
    const store = inProcessSpy(memoryStore(), () => undefined);
    const deny = createLimiter({ store, algorithm: 'gcra', limit: 5, window: '1s', degraded: 'deny' });
    let pending: Promise<unknown> | undefined;
    expect(() => {
      pending = deny.take('u');
    }).not.toThrow();
    expect(await pending).toMatchObject({ allowed: false, reason: 'degraded-deny' });
    const strict = createLimiter({ store, algorithm: 'gcra', limit: 5, window: '1s' });
    const err = await strict.take('u').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isOnceflowError(err, 'ERR_STORE')).toBe(true);
  });

  it('the memory store called directly with a clock answering NaN rejects, never throws', async () => {
    const store = memoryStore({ clock: { now: () => Number.NaN } });
    const spec = createLimiter({ store, algorithm: 'gcra', limit: 1, window: 1000 }).limits[0] as LimitSpec;
    let pending: Promise<unknown> | undefined;
    expect(() => {
      pending = store.limiterTake?.({ namespace: '|l:direct', limits: [{ spec, subject: 'k' }], cost: 1 }) as
        | Promise<unknown>
        | undefined;
    }).not.toThrow();
    const err = await (pending as Promise<unknown>).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isOnceflowError(err, 'ERR_STORE')).toBe(true);
  });

  it('the memory store called directly refuses a bad cost or time (a rejection, never a throw), and charges nothing', async () => {
    const clock = new FakeClock(5000);
    const store = memoryStore({ clock });
    const limiter = createLimiter({
      store,
      algorithm: 'sliding-window',
      limit: 3,
      window: 1000,
      granularity: 100,
    });
    const spec = limiter.limits[0] as LimitSpec;
    const namespace = '|l:direct';
    // One limit (the store's short way) and the same limit twice over two subjects (the general way).
    const one = [{ spec, subject: 'k' }];
    const two = [
      { spec, subject: 'k', by: 'a' },
      { spec, subject: 'k', by: 'b' },
    ];
    for (const limits of [one, two]) {
      const take = (cost: number, now?: number) => {
        let answer: unknown;
        expect(() => {
          answer = store.limiterTake?.({ namespace, limits, cost, now });
        }).not.toThrow();
        return Promise.resolve(answer as LimiterTakeReply);
      };
      for (const cost of [-1, 1.5, Number.POSITIVE_INFINITY, Number.NaN]) {
        await expect(take(cost)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
      }
      for (const now of [Number.NaN, -1, 2 ** 52]) {
        await expect(take(1, now)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
      }
      expect((await take(0)).verdicts[0]?.remaining).toBe(3);
      expect((await take(3)).verdicts[0]?.remaining).toBe(0);
    }
  });

  it('the limits it hands out cannot be changed to change its decisions', async () => {
    const { limiter } = fixture({ algorithm: 'fixed-window', limit: 1, window: '1s' });
    expect(() => {
      (limiter.limits[0] as { limit: number }).limit = 100;
    }).toThrow(TypeError);
    expect(() => {
      (limiter.limits as unknown[]).push({});
    }).toThrow(TypeError);
    await limiter.take('u');
    expect((await limiter.take('u')).allowed).toBe(false);
  });

  it('a block never outlasts the store refusal: its wait counts from before the store was asked', async () => {
    const clock = new FakeClock(0);
    const inner = memoryStore({ clock });
    // A store whose answers take 50 ms to come back (decided on arrival, replied later).
    const slow = wrapStore(inner, {
      limiterTake: async (cmd) => {
        const reply = await inner.limiterTake?.(cmd);
        clock.advance(50);
        return reply as LimiterTakeReply;
      },
    });
    const limiter = createLimiter({ store: slow, clock, algorithm: 'fixed-window', limit: 1, window: '1s' });
    expect((await limiter.take('u')).allowed).toBe(true); // asked at 0
    expect(await limiter.take('u')).toMatchObject({ reason: 'limited', retryAfterMs: 950 }); // asked at 50
    clock.set(1000); // the store's window is over
    expect(await limiter.take('u')).toMatchObject({ allowed: true, reason: 'allowed' });
  });

  it('the block cache answers only the cost it saw refused, with every limit of that refusal', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      algorithm: 'gcra',
      limit: 10,
      window: '1s',
    });
    await limiter.take('u', { cost: 10 });
    expect(await limiter.take('u', { cost: 1 })).toMatchObject({ reason: 'limited', retryAfterMs: 100 });
    expect(await limiter.take('u', { cost: 1 })).toMatchObject({ reason: 'blocked', retryAfterMs: 100 });
    // A larger cost needs a longer wait than the block knows: the store answers it exactly.
    expect(await limiter.take('u', { cost: 5 })).toMatchObject({ reason: 'limited', retryAfterMs: 500 });

    // A remote store (a memory store behind the asynchronous path, as Redis is) keeping its own
    // time, far from this process's wall clock.
    const storeClock = new FakeClock(10_000);
    const two = createLimiter({
      store: wrapStore(memoryStore({ clock: storeClock }), {}),
      limits: [
        { id: 'a', algorithm: 'fixed-window', limit: 1, window: '1m' },
        { id: 'b', algorithm: 'fixed-window', limit: 5, window: '1h' },
      ],
    });
    await two.take('u');
    const limited = await two.take('u');
    const blocked = await two.take('u');
    expect(limited.reason).toBe('limited');
    expect(blocked.reason).toBe('blocked');
    expect(blocked.limits.map((p) => p.id)).toEqual(['a', 'b']);
    expect(blocked.at - limited.at).toBeLessThan(1000); // store time, moved by the time since
    expect(rateLimitHeaders(blocked)['RateLimit-Policy']).toBe(rateLimitHeaders(limited)['RateLimit-Policy']);
  });

  it('one limit on the memory store: a busy set of 19,000 keys cycled through keeps every key cached', async () => {
    // The cache of calls forgets only keys unused for ~20,000 takes: cycled through, each key
    // comes back as the same call (a lost one would be rebuilt, and its state found again by key).
    const base = memoryStore();
    const calls = new Map<string, unknown>();
    let rebuilt = 0;
    const store = inProcessSpy(base, (command, inner) => {
      const call = command.limits[0] as LimitCall;
      const seen = calls.get(call.subject);
      if (seen !== undefined && seen !== call) rebuilt++;
      calls.set(call.subject, call);
      return inner(command);
    });
    const limiter = createLimiter({
      store,
      algorithm: 'fixed-window',
      limit: 100,
      window: '1h',
      blockCache: false,
    });
    const keys = Array.from({ length: 19_000 }, (_, i) => `user-${i}`);
    for (let round = 0; round < 3; round++) for (const key of keys) await limiter.take(key);
    expect(calls.size).toBe(19_000);
    expect(rebuilt).toBe(0);
  });

  it('one limit on the memory store: a key seen before is taken through its cached call, checked alike', async () => {
    const clock = new FakeClock(0);
    const base = memoryStore({ clock });
    let oneCalls = 0;
    let mode: 'ok' | 'throw' | 'no decision' = 'ok';
    const store = inProcessSpy(base, (command, inner) => {
      if (command.limits.length === 1) oneCalls++;
      if (mode === 'throw') throw new Error('boom');
      if (mode === 'no decision') return undefined;
      return inner(command);
    });
    const limit = { algorithm: 'fixed-window', limit: 3, window: '1s' } as const;
    const options = { ...limit, blockCache: false } as const;
    const limiter = createLimiter({ store, clock, ...options, degraded: 'deny' });
    expect((await limiter.take('u')).remaining).toBe(2); // a key's first take: its call made and kept
    expect(oneCalls).toBe(1);
    expect((await limiter.take('u', { cost: 1 })).remaining).toBe(1);
    expect(oneCalls).toBe(2);
    // `{ cots: 2 }`: a misspelt cost would charge 1; refused (naming `cost`) and charges nothing.
    for (const bad of [null, 5, 'x', [], { cost: -1 }, { cost: 1.5 }, { cost: '1' }, { cots: 2 }]) {
      const err = await limiter.take('u', bad as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    }
    expect(oneCalls).toBe(2); // refused before the store was asked: nothing charged
    expect((await limiter.take('u', { cost: 0 })).remaining).toBe(1);
    // A failure of the one-call path ends in the degraded policy, as any store failure.
    for (const failing of ['throw', 'no decision'] as const) {
      mode = failing;
      let pending: Promise<unknown> | undefined;
      expect(() => {
        pending = limiter.take('u');
      }).not.toThrow();
      expect(await pending).toMatchObject({ allowed: false, reason: 'degraded-deny' });
    }
    mode = 'ok';
    expect((await limiter.take('u')).remaining).toBe(0);
    // A key given as `{ key }` is found in the same cache: the same call, not one built anew
    // (a new one would cost a key string per take and drop the call's memo of its state).
    const seenCalls = new Set<unknown>();
    const spied = inProcessSpy(base, (command, inner) => {
      seenCalls.add(command.limits[0]);
      return inner(command);
    });
    const both = createLimiter({ store: spied, clock, ...options, name: 'both' });
    for (const key of ['w', { key: 'w' }, 'w', { key: 'w' }]) await both.take(key);
    expect(seenCalls.size).toBe(1);
    // A limiter of two limits sends both in each take.
    oneCalls = 0;
    const two = createLimiter({
      store,
      clock,
      limits: [
        { ...limit, id: 'a' },
        { ...limit, id: 'b' },
      ],
      blockCache: false,
    });
    for (let i = 0; i < 3; i++) await two.take('v');
    expect(oneCalls).toBe(0);
  });

  it('bad take options and a bad timeout are typed errors, whatever the store', async () => {
    const { limiter } = fixture({ algorithm: 'gcra', limit: 1, window: '1s' });
    for (const options of [null, 5, 'x', []]) {
      const err = await limiter.take('u', options as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    }
    expect(() =>
      createLimiter({
        store: memoryStore(),
        algorithm: 'gcra',
        limit: 1,
        window: '1s',
        timeout: 'soon' as never,
      }),
    ).toThrow(/`timeout`/);
  });

  it('multi-subject block cache: subject lists that would join alike stay apart', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      limits: [
        { id: 'u', by: 'user', algorithm: 'fixed-window', limit: 1, window: '1s' },
        { id: 'i', by: 'ip', algorithm: 'fixed-window', limit: 1, window: '1s' },
      ],
    });
    await limiter.take({ user: 'a\nb', ip: 'c' });
    expect(await limiter.take({ user: 'a\nb', ip: 'c' })).toMatchObject({
      allowed: false,
      reason: 'limited',
    });
    expect(await limiter.take({ user: 'a\nb', ip: 'c' })).toMatchObject({
      allowed: false,
      reason: 'blocked',
    });
    expect(await limiter.take({ user: 'a', ip: 'b\nc' })).toMatchObject({ allowed: true, reason: 'allowed' });
  });

  it('a store member named limiterTakeSync is not mistaken for an in-process fast path', async () => {
    // Not part of the Store contract: a store may have a member of that name answering anything
    // (here a reply, not a decision); only the internal in-process interface is trusted.
    const store = Object.assign(wrapStore(memoryStore({ clock: new FakeClock(0) }), {}), {
      limiterTakeSync: () => ({ now: 0, allowed: true, verdicts: [] }),
    });
    const limiter = createLimiter({ store, algorithm: 'fixed-window', limit: 1, window: '1s' });
    expect(await limiter.take('u')).toMatchObject({
      allowed: true,
      limit: 1,
      remaining: 0,
      reason: 'allowed',
    });
    expect(await limiter.take('u')).toMatchObject({ allowed: false, reason: 'limited', retryAfterMs: 1000 });
  });

  it('a store that throws instead of rejecting ends in the degraded policy, never in a throw', async () => {
    const throwing = {
      kind: 'custom',
      limiterTake() {
        throw new Error('broken driver');
      },
    } as unknown as Store;
    for (const timeout of [0, 50]) {
      const deny = createLimiter({
        store: throwing,
        algorithm: 'gcra',
        limit: 5,
        window: '1s',
        degraded: 'deny',
        timeout,
      });
      let result: Promise<unknown> | undefined;
      expect(() => {
        result = deny.take('u');
      }).not.toThrow();
      expect(await result).toMatchObject({ allowed: false, reason: 'degraded-deny' });
    }
  });

  it('rejects a bad key or cost as invalid arguments', async () => {
    const { limiter } = fixture({ algorithm: 'gcra', limit: 1, window: '1s' });
    await expect(limiter.take('')).rejects.toThrow(/`key` to be a non-empty, well-formed Unicode string/);
    await expect(limiter.take('u\ud800')).rejects.toThrow(/`key` to be a non-empty, well-formed Unicode/);
    await expect(limiter.take('u', { cost: -1 })).rejects.toThrow(/`cost` to be a non-negative safe integer/);
    await expect(limiter.take({ user: 'u' })).rejects.toThrow(/`key.key`/);
    const multi = fixture({
      limits: [
        { algorithm: 'gcra', limit: 1, window: '1s', by: 'user' },
        { algorithm: 'gcra', limit: 1, window: '1s', by: 'ip', id: 'ip' },
      ],
    }).limiter;
    await expect(multi.take('u')).rejects.toThrow(/`key` to be an object with `user`, `ip`/);
    // One named subject: its values are cached as the plain key's are, and a plain string key is
    // still refused after the same value was taken as a subject (and a bad key after a good one).
    const byUser = fixture({ limits: [{ algorithm: 'gcra', limit: 5, window: '1s', by: 'user' }] }).limiter;
    expect((await byUser.take({ user: 'u' })).allowed).toBe(true);
    await expect(byUser.take('u')).rejects.toThrow(/`key` to be an object with `user`/);
    expect((await limiter.take('u')).allowed).toBe(true);
    await expect(limiter.take('u', { cost: 1.5 })).rejects.toThrow(/`cost`/);
    await expect(limiter.take('u', 'fast' as never)).rejects.toThrow(/`options`/);
  });

  it('refuses a window slide the limit would ignore, naming what it means there', async () => {
    const { window } = await import('../core/window-config.js');
    const make = (algorithm: 'sliding-log' | 'sliding-window' | 'fixed-window' | 'gcra', w: unknown) =>
      createLimiter({ algorithm, limit: 10, window: w as never });
    for (const algorithm of ['sliding-log', 'fixed-window', 'gcra'] as const) {
      expect(() => make(algorithm, window('3s').slide('1s'))).toThrow(
        /`window.slide` to be the whole window \(3000 ms\)/,
      );
      expect(make(algorithm, window('3s').slide('3s')).limits[0]?.windowMs).toBe(3000);
    }
    // sliding-window: the window moves one bucket at a time, so the slide is the bucket.
    expect(make('sliding-window', window('3s').slide('1s')).limits[0]).toMatchObject({ param: 1000 });
    expect(() => make('sliding-window', window('3s').slide('1s').granularity('500ms'))).toThrow(
      /`window.slide` to be the bucket \(500 ms\) or the whole window \(3000 ms\)/,
    );
    expect(make('sliding-window', window('3s').granularity('500ms')).limits[0]).toMatchObject({ param: 500 });
    // Buckets too: only the sliding window has them.
    for (const algorithm of ['sliding-log', 'fixed-window', 'gcra'] as const) {
      expect(() => make(algorithm, window('3s').granularity('1s'))).toThrow(
        /`window.granularity` to be the whole window \(3000 ms\): only 'sliding-window' has buckets/,
      );
    }
    expect(() =>
      make('fixed-window', { kind: 'window', lengthMs: 3000, slideMs: 'x', granularityMs: 1000 }),
    ).toThrow(/`window.slide`/);
  });

  it('refuses options it would ignore or could not keep: inline fields beside limits, two buckets, too many buckets, a log past 2^52', async () => {
    const { window } = await import('../core/window-config.js');
    const limits = [{ algorithm: 'gcra', limit: 5, window: '1s' }] as const;
    for (const [field, value] of [
      ['algorithm', 'nope'],
      ['limit', 'x'],
      ['window', -5],
      ['burst', 3],
    ] as const) {
      expect(() => createLimiter({ limits: [...limits], [field]: value } as never)).toThrow(
        new RegExp(`\`${field}\` to be absent when \`limits\` is given`),
      );
    }
    expect(() =>
      createLimiter({
        algorithm: 'sliding-window',
        limit: 10,
        window: window('1s').granularity('100ms'),
        granularity: '500ms',
      }),
    ).toThrow(/`granularity` to be absent, or the window's own granularity \(100 ms\)/);
    // The same bucket twice is no conflict.
    expect(
      createLimiter({
        algorithm: 'sliding-window',
        limit: 10,
        window: window('1s').granularity('100ms'),
        granularity: '100ms',
      }).limits[0],
    ).toMatchObject({ param: 100 });
    expect(() =>
      createLimiter({ algorithm: 'sliding-window', limit: 10, window: '1h', granularity: '100ms' }),
    ).toThrow(/at most 4096 buckets per window/);
    expect(
      createLimiter({ algorithm: 'sliding-window', limit: 10, window: '1h', granularity: '1s' }).limits[0],
    ).toMatchObject({ param: 1000 });
    expect(() => createLimiter({ algorithm: 'sliding-log', limit: 2 ** 52 + 1, window: 1 })).toThrow(
      /`limit` to be at most 2\^52 for a sliding log/,
    );
  });

  it('gcra keeps a new rate apart from state counted at another rate (an explicit burst does not change with it)', async () => {
    const clock = new FakeClock(1_000_000);
    const store = memoryStore({ clock });
    const at = (limit: number) =>
      createLimiter({ store, clock, algorithm: 'gcra', limit, burst: 2, window: '1s', blockCache: false });
    const slow = at(1);
    expect((await slow.take('k', { cost: 2 })).allowed).toBe(true); // the burst spent at 1/s
    // At 1000/s the same burst refills in 2 ms: read with the old rate's state it would wait ~2 s.
    const fast = at(1000);
    expect((await fast.take('k', { cost: 2 })).allowed).toBe(true);
    clock.advance(2);
    expect((await fast.take('k', { cost: 2 })).allowed).toBe(true);
  });

  it('accepts a window config: its granularity is the bucket', async () => {
    const { window } = await import('../core/window-config.js');
    const { limiter } = fixture({
      algorithm: 'sliding-window',
      limit: 10,
      window: window('1m').granularity('1s'),
    });
    expect(limiter.limits[0]).toMatchObject({ windowMs: 60_000, param: 1000, id: '10/1m' });
  });
});

describe('names and ids with a lone surrogate', () => {
  it('are refused by every constructor that turns them into store keys or headers', () => {
    const lone = 'x\ud800';
    const attempts: [string, () => unknown][] = [
      ['name', () => createLimiter({ name: lone, algorithm: 'gcra', limit: 1, window: '1s' })],
      ['id', () => createLimiter({ limits: [{ id: lone, algorithm: 'gcra', limit: 1, window: '1s' }] })],
      ['by', () => createLimiter({ limits: [{ by: lone, algorithm: 'gcra', limit: 1, window: '1s' }] })],
      ['name', () => createLedger({ name: lone, capacity: 4 })],
      ['name', () => new VersionGate({ store: memoryStore(), name: lone })],
    ];
    for (const [option, make] of attempts) {
      const err = thrown(make);
      expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
      expect((err as { option: string }).option).toMatch(new RegExp(`(^|\\.)${option}$`));
    }
  });
});
