import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { FakeClock } from '../core/clock.js';
import { StoreError } from '../core/errors.js';
import { createLimiter } from '../limiter/limiter.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { httpRateLimit } from './rate-limit.js';
import type { HttpRequestInfo } from './request.js';

const info = (ip: string): HttpRequestInfo => ({ method: 'GET', url: '/', ip, header: () => undefined });

describe('httpRateLimit', () => {
  it('decides every limit at once, sends the RateLimit fields, and refuses with a 429 problem', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      limits: [
        { id: 'burst', algorithm: 'fixed-window', limit: 2, window: '1s' },
        { id: 'hour', algorithm: 'fixed-window', limit: 100, window: '1h' },
      ],
    });
    const limit = httpRateLimit<{ user: string }>({ limiter, key: (r) => r.user });
    const a = await limit.check({ user: 'a' }, info('1.1.1.1'));
    expect(a).toMatchObject({
      pass: true,
      headers: {
        'RateLimit-Policy': '"burst";q=2;w=1, "hour";q=100;w=3600',
        RateLimit: '"burst";r=1;t=1, "hour";r=99;t=3600',
      },
    });
    await limit.check({ user: 'a' }, info('1.1.1.1'));
    const refused = await limit.check({ user: 'a' }, info('1.1.1.1'));
    if (refused.pass) throw new Error('expected a refusal');
    expect(refused.answer.status).toBe(429);
    expect(refused.answer.headers).toMatchObject({
      'Retry-After': '1',
      'content-type': 'application/problem+json',
    });
    expect(JSON.parse(refused.answer.body)).toMatchObject({
      status: 429,
      retryAfter: 1,
      type: expect.stringContaining('#rate-limited'),
    });
    // Another subject has its own counters; at the window's edge the first is admitted again.
    expect((await limit.check({ user: 'b' }, info('1.1.1.1'))).pass).toBe(true);
    clock.advance(1000);
    expect((await limit.check({ user: 'a' }, info('1.1.1.1'))).pass).toBe(true);
  });

  it('keys by IP by default, skips what skip says, charges the cost, and sends no headers when told', async () => {
    const limiter = createLimiter({ algorithm: 'fixed-window', limit: 3, window: '1m' });
    const limit = httpRateLimit<{ path: string }>({
      limiter,
      skip: (r) => r.path === '/health',
      cost: (r) => (r.path === '/export' ? 3 : 1),
      headers: false,
    });
    expect(await limit.check({ path: '/health' }, info('ip1'))).toEqual({ pass: true, headers: {} });
    expect(await limit.check({ path: '/export' }, info('ip1'))).toMatchObject({ pass: true, headers: {} });
    expect((await limit.check({ path: '/' }, info('ip1'))).pass).toBe(false);
    expect((await limit.check({ path: '/' }, info('ip2'))).pass).toBe(true);
  });

  it('on a store failure: fails by default, passes unlimited with onStoreError pass', async () => {
    const down = wrapStore(memoryStore(), {
      limiterTake: () => Promise.reject(new StoreError('limiterTake', new Error('down'))),
    });
    const limiter = createLimiter({ store: down, algorithm: 'gcra', limit: 1, window: '1s' });
    await expect(httpRateLimit({ limiter }).check({}, info('x'))).rejects.toMatchObject({
      code: 'ERR_STORE',
    });
    expect(await httpRateLimit({ limiter, onStoreError: 'pass' }).check({}, info('x'))).toEqual({
      pass: true,
      headers: {},
    });
  });

  it('refuses bad options by name', () => {
    const limiter = createLimiter({ algorithm: 'gcra', limit: 1, window: '1s' });
    expect(thrown(() => httpRateLimit({} as never))).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      option: 'limiter',
    });
    expect(thrown(() => httpRateLimit({ limiter, key: 'ip' as never }))).toMatchObject({ option: 'key' });
    expect(thrown(() => httpRateLimit({ limiter, onStoreError: 'skip' as never }))).toMatchObject({
      option: 'onStoreError',
    });
    expect(thrown(() => httpRateLimit({ limiter, skp: () => true } as never))).toMatchObject({
      message: expect.stringContaining('did you mean `skip`'),
    });
  });
});
