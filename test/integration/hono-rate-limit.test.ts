// onceflow/hono's rateLimit over real HTTP (@hono/node-server on a free port, global fetch) and
// the Web-standard path (app.fetch(new Request)), on the memory store and on Redis: the RateLimit
// headers, the 429 problem, Retry-After, skip, key, cost, window edges on a FakeClock, a limiter
// whose limits decide together, per-route policies and a failing store.
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import { rateLimit } from '../../src/hono/index.js';
import { createLimiter, type LimitOptions } from '../../src/index.js';
import { wrapStore } from '../../src/testing/wrap-store.js';
import { type HonoClient, matrix } from './hono-env.js';

// A whole number of hours: every fixed window here (10 s, 1 min, 1 h) starts at it.
const START = 1000 * 3_600_000;
const PROBLEM = 'https://github.com/onceflow/onceflow/blob/main/docs/http.md#rate-limited';

for (const [title, transport, binding] of matrix('hono-rate-limit')) {
  describe(`hono rateLimit (${title})`, () => {
    let client: HonoClient | undefined;
    afterEach(async () => {
      await client?.close();
      client = undefined;
    });
    const open = async (app: Hono) => {
      client = await transport.open(app);
      return client;
    };
    const limiterOf = (clock: FakeClock, limits: LimitOptions[]) =>
      createLimiter({ store: binding.make(clock), clock, limits, blockCache: false });

    it('a passing request gets RateLimit-Policy and RateLimit for every limit, over its own headers', async () => {
      const clock = new FakeClock(START);
      const limiter = limiterOf(clock, [
        { id: 'burst', algorithm: 'fixed-window', limit: 3, window: '10s' },
        { id: 'hour', algorithm: 'fixed-window', limit: 100, window: '1h' },
      ]);
      const app = new Hono();
      app.use('*', rateLimit({ limiter, key: () => 'u1' }));
      app.get('/json', (c) => c.json({ ok: true }, 200, { 'x-mine': 'kept' }));
      // A handler's own Response (no c.header-prepared headers reach it): the headers still do.
      app.get('/raw', () => new Response('raw', { headers: { 'x-mine': 'raw' } }));
      const { send } = await open(app);
      const a = await send('/json');
      expect(a.status).toBe(200);
      expect(await a.json()).toEqual({ ok: true });
      expect(a.headers.get('x-mine')).toBe('kept');
      expect(a.headers.get('ratelimit-policy')).toBe('"burst";q=3;w=10, "hour";q=100;w=3600');
      expect(a.headers.get('ratelimit')).toBe('"burst";r=2;t=10, "hour";r=99;t=3600');
      expect(a.headers.get('retry-after')).toBeNull();
      const b = await send('/raw');
      expect(await b.text()).toBe('raw');
      expect(b.headers.get('x-mine')).toBe('raw');
      expect(b.headers.get('ratelimit')).toBe('"burst";r=1;t=10, "hour";r=98;t=3600');
    });

    it('a refused request: 429 problem+json with Retry-After, and the handler never runs', async () => {
      const clock = new FakeClock(START);
      const limiter = limiterOf(clock, [{ id: 'api', algorithm: 'fixed-window', limit: 2, window: '1m' }]);
      let runs = 0;
      const app = new Hono();
      app.use('*', rateLimit({ limiter, key: () => 'u1' }));
      app.post('/orders', (c) => c.text(String(++runs)));
      const { send } = await open(app);
      expect((await send('/orders', { method: 'POST' })).status).toBe(200);
      clock.advance(20_000);
      expect((await send('/orders', { method: 'POST' })).status).toBe(200);
      const refused = await send('/orders', { method: 'POST' });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(refused.headers.get('retry-after')).toBe('40');
      expect(refused.headers.get('ratelimit-policy')).toBe('"api";q=2;w=60');
      expect(refused.headers.get('ratelimit')).toBe('"api";r=0;t=40');
      expect(await refused.json()).toEqual({
        type: PROBLEM,
        title: 'Too Many Requests',
        status: 429,
        detail: 'Too many requests; retry after 40 s.',
        retryAfter: 40,
      });
      expect(runs).toBe(2);
    });

    it('the limits decide together: a refusal by one charges none of the others', async () => {
      const clock = new FakeClock(START);
      const limiter = limiterOf(clock, [
        { id: 'wide', algorithm: 'fixed-window', limit: 10, window: '1m' },
        { id: 'narrow', algorithm: 'fixed-window', limit: 1, window: '1m' },
      ]);
      const app = new Hono();
      app.use('*', rateLimit({ limiter, key: () => 'u1' }));
      app.get('/', (c) => c.text('ok'));
      const { send } = await open(app);
      expect((await send('/')).headers.get('ratelimit')).toBe('"wide";r=9;t=60, "narrow";r=0;t=60');
      for (let i = 0; i < 3; i++) {
        const r = await send('/');
        expect(r.status).toBe(429);
        expect(r.headers.get('ratelimit')).toBe('"wide";r=9;t=60, "narrow";r=0;t=60');
      }
    });

    it('window edges on the FakeClock: refused 1 ms before the window ends, admitted at its end', async () => {
      const clock = new FakeClock(START);
      const limiter = limiterOf(clock, [{ id: 'api', algorithm: 'fixed-window', limit: 1, window: '1m' }]);
      const app = new Hono();
      app.use('*', rateLimit({ limiter, key: () => 'u1' }));
      app.get('/', (c) => c.text('ok'));
      const { send } = await open(app);
      expect((await send('/')).headers.get('ratelimit')).toBe('"api";r=0;t=60');
      clock.advance(59_999);
      const late = await send('/');
      expect(late.status).toBe(429);
      // 1 ms left, rounded up: a client that waits Retry-After never comes back early.
      expect(late.headers.get('retry-after')).toBe('1');
      expect(late.headers.get('ratelimit')).toBe('"api";r=0;t=1');
      clock.advance(1);
      const next = await send('/');
      expect(next.status).toBe(200);
      expect(next.headers.get('ratelimit')).toBe('"api";r=0;t=60');
    });

    it('skip: not counted and no headers; cost: what a request takes', async () => {
      const clock = new FakeClock(START);
      const limiter = limiterOf(clock, [{ id: 'api', algorithm: 'fixed-window', limit: 10, window: '1m' }]);
      const app = new Hono();
      app.use(
        '*',
        rateLimit({
          limiter,
          key: () => 'u1',
          skip: (c) => c.req.path === '/health',
          cost: (c) => (c.req.path === '/export' ? 4 : 1),
        }),
      );
      app.get('/health', (c) => c.text('up'));
      app.get('/export', (c) => c.text('csv'));
      app.get('/', (c) => c.text('ok'));
      const { send } = await open(app);
      for (let i = 0; i < 20; i++) {
        const h = await send('/health');
        expect(h.status).toBe(200);
        expect(h.headers.get('ratelimit')).toBeNull();
      }
      expect((await send('/export')).headers.get('ratelimit')).toBe('"api";r=6;t=60');
      expect((await send('/')).headers.get('ratelimit')).toBe('"api";r=5;t=60');
      expect((await send('/export')).headers.get('ratelimit')).toBe('"api";r=1;t=60');
      expect((await send('/export')).status).toBe(429);
      expect((await send('/')).status).toBe(200);
    });

    it('key: one subject per key; ipHeader: the last entry of a trusted proxy header', async () => {
      const clock = new FakeClock(START);
      const spec: LimitOptions[] = [{ id: 'api', algorithm: 'fixed-window', limit: 1, window: '1m' }];
      const app = new Hono();
      app.use(
        '/user/*',
        rateLimit({ limiter: limiterOf(clock, spec), key: (c) => c.req.header('x-user') ?? '' }),
      );
      app.use('/ip/*', rateLimit({ limiter: limiterOf(clock, spec), ipHeader: 'x-forwarded-for' }));
      app.get('*', (c) => c.text('ok'));
      const { send } = await open(app);
      const as = (user: string) => send('/user/a', { headers: { 'x-user': user } });
      expect((await as('ann')).status).toBe(200);
      expect((await as('bob')).status).toBe(200);
      expect((await as('ann')).status).toBe(429);
      const from = (xff: string) => send('/ip/a', { headers: { 'x-forwarded-for': xff } });
      expect((await from('10.0.0.1, 192.0.2.7')).status).toBe(200);
      // The client rewrote the left part: still the address the proxy appended.
      expect((await from('10.9.9.9, 192.0.2.7')).status).toBe(429);
      expect((await from('192.0.2.8')).status).toBe(200);
    });

    it('a policy per route: one middleware per route, each its own limiter', async () => {
      const clock = new FakeClock(START);
      const app = new Hono();
      const strict = limiterOf(clock, [{ id: 'login', algorithm: 'fixed-window', limit: 1, window: '1m' }]);
      const loose = limiterOf(clock, [{ id: 'read', algorithm: 'fixed-window', limit: 5, window: '1m' }]);
      app.post('/login', rateLimit({ limiter: strict, key: () => 'u1' }), (c) => c.text('in'));
      app.get('/items', rateLimit({ limiter: loose, key: () => 'u1' }), (c) => c.text('items'));
      const { send } = await open(app);
      expect((await send('/login', { method: 'POST' })).status).toBe(200);
      expect((await send('/login', { method: 'POST' })).status).toBe(429);
      const items = await send('/items');
      expect(items.status).toBe(200);
      expect(items.headers.get('ratelimit')).toBe('"read";r=4;t=60');
    });

    it("a failing store: 'fail' answers 500 from Hono's error handler, 'pass' lets the request through", async () => {
      const clock = new FakeClock(START);
      const broken = wrapStore(binding.make(clock), {
        limiterTake: () => Promise.reject(new Error('connection refused')),
      });
      const limiter = createLimiter({
        store: broken,
        clock,
        limits: [{ id: 'api', algorithm: 'fixed-window', limit: 1, window: '1m' }],
      });
      let runs = 0;
      const app = new Hono();
      app.use('/fail/*', rateLimit({ limiter, key: () => 'u1' }));
      app.use('/pass/*', rateLimit({ limiter, key: () => 'u1', onStoreError: 'pass' }));
      app.get('*', (c) => c.text(String(++runs)));
      let seen: unknown;
      app.onError((err, c) => {
        seen = err;
        return c.text('store down', 500);
      });
      const { send } = await open(app);
      const failed = await send('/fail/a');
      expect(failed.status).toBe(500);
      expect(seen).toMatchObject({ code: 'ERR_STORE' });
      expect(runs).toBe(0);
      for (let i = 0; i < 3; i++) {
        const passed = await send('/pass/a');
        expect(passed.status).toBe(200);
        expect(passed.headers.get('ratelimit')).toBeNull();
      }
      expect(runs).toBe(3);
    });
  });
}

describe('hono rateLimit options', () => {
  const limiter = createLimiter({ limits: [{ id: 'api', algorithm: 'gcra', limit: 1, window: '1s' }] });
  it('needs a key or an ipHeader: Hono has no portable client address', () => {
    expect(() => rateLimit({ limiter })).toThrow(/`key` to be a function of the request/);
  });
  it('refuses an unknown option with a did-you-mean, and a bad header name', () => {
    expect(() => rateLimit({ limiter, key: () => 'k', ipHeaders: 'x' } as never)).toThrow(/ipHeader/);
    expect(() => rateLimit({ limiter, ipHeader: 'x forwarded' })).toThrow(
      /`ipHeader` to be an HTTP header name/,
    );
    expect(() => rateLimit({ limiter, key: 'k' } as never)).toThrow(/`key` to be a function/);
  });
});
