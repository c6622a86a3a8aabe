import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { rateLimitHeaders } from './headers.js';
import { createLimiter } from './limiter.js';

describe('rateLimitHeaders', () => {
  it('renders policy and state per limit, and Retry-After rounded up when refused', async () => {
    const clock = new FakeClock(500);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      limits: [
        { id: 'burst', algorithm: 'gcra', limit: 10, window: '1s', burst: 2 },
        { id: 'daily "quota"', algorithm: 'fixed-window', limit: 1000, window: '1d' },
      ],
    });
    const ok = await limiter.take('u');
    expect(rateLimitHeaders(ok)).toEqual({
      'RateLimit-Policy': '"burst";q=10;w=1, "daily \\"quota\\"";q=1000;w=86400',
      RateLimit: '"burst";r=1;t=1, "daily \\"quota\\"";r=999;t=86400',
    });
    await limiter.take('u');
    const refused = await limiter.take('u');
    expect(refused.retryAfterMs).toBe(100);
    expect(rateLimitHeaders(refused)['Retry-After']).toBe('1');
  });

  it('a GCRA burst above the limit never shows more remaining than the quota q', async () => {
    const clock = new FakeClock(0);
    const limiter = createLimiter({
      store: memoryStore({ clock }),
      clock,
      limits: [{ id: 'api', algorithm: 'gcra', limit: 2, window: '1s', burst: 10 }],
    });
    const first = await limiter.take('u');
    expect(first.remaining).toBe(9); // the decision itself says what the burst leaves
    expect(rateLimitHeaders(first).RateLimit).toBe('"api";r=2;t=1');
    expect(rateLimitHeaders(first)['RateLimit-Policy']).toBe('"api";q=2;w=1');
  });

  it('merges several decisions (per user and per IP limiters) and takes the longest wait', async () => {
    const clock = new FakeClock(0);
    const store = memoryStore({ clock });
    const user = createLimiter({
      store,
      clock,
      name: 'user',
      id: 'user',
      algorithm: 'sliding-log',
      limit: 1,
      window: '10s',
    });
    const ip = createLimiter({
      store,
      clock,
      name: 'ip',
      id: 'ip',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
    });
    await Promise.all([user.take('u'), ip.take('1.2.3.4')]);
    clock.advance(2500);
    const headers = rateLimitHeaders([await user.take('u'), await ip.take('1.2.3.4')]);
    expect(headers).toEqual({
      'RateLimit-Policy': '"user";q=1;w=10, "ip";q=1;w=60',
      RateLimit: '"user";r=0;t=8, "ip";r=0;t=58',
      'Retry-After': '58',
    });
  });

  it('sends no Retry-After for a cost that can never pass', async () => {
    const limiter = createLimiter({ algorithm: 'gcra', limit: 1, window: '1s' });
    expect(rateLimitHeaders(await limiter.take('u', { cost: 5 }))['Retry-After']).toBeUndefined();
  });
});

describe('rateLimitHeaders: input and clashes', () => {
  it('a limit id listed by several decisions shows its binding state; different ids never merge', async () => {
    const clock = new FakeClock(0);
    const store = memoryStore({ clock });
    const tight = createLimiter({
      store,
      clock,
      name: 'a',
      id: 'x',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
    });
    const roomy = createLimiter({
      store,
      clock,
      name: 'b',
      id: 'x',
      algorithm: 'fixed-window',
      limit: 100,
      window: '1m',
    });
    await tight.take('u');
    const refused = await tight.take('u');
    const allowed = await roomy.take('u');
    const headers = rateLimitHeaders([refused, allowed]);
    expect(headers.RateLimit).toBe('"x";r=0;t=60');
    expect(headers['Retry-After']).toBe('60');
    const e = createLimiter({ store, clock, name: 'c', id: 'é', algorithm: 'gcra', limit: 1, window: '1s' });
    const u = createLimiter({ store, clock, name: 'd', id: 'ü', algorithm: 'gcra', limit: 1, window: '1s' });
    const both = rateLimitHeaders([await e.take('u'), await u.take('u')]);
    expect(both['RateLimit-Policy']).toBe('"%C3%A9";q=1;w=1, "%C3%BC";q=1;w=1');
  });

  it('one id in two decisions: the policy shown is the one whose state is reported', () => {
    const part = (limit: number, windowMs: number, remaining: number) => ({
      id: 'api',
      allowed: remaining > 0,
      limit,
      windowMs,
      remaining,
      resetAt: windowMs,
      retryAfterMs: 0,
    });
    const decision = (p: ReturnType<typeof part>) => ({ allowed: true, at: 0, retryAfterMs: 0, limits: [p] });
    const headers = rateLimitHeaders([
      decision(part(10, 60_000, 1)),
      decision(part(100, 1_000, 50)),
    ] as never);
    expect(headers['RateLimit-Policy']).toBe('"api";q=10;w=60');
    expect(headers.RateLimit).toBe('"api";r=1;t=60');
  });

  it('no decision: no empty fields; not a decision: a typed error', () => {
    expect(rateLimitHeaders([])).toEqual({});
    for (const bad of [undefined, null, {}, [{ allowed: true }]]) {
      expect(() => rateLimitHeaders(bad as never)).toThrow(/decisions\[0\]/);
    }
    for (const part of [null, {}, { id: 'a', limit: 1, windowMs: 1000, remaining: 0 }]) {
      const err = (() => {
        try {
          rateLimitHeaders([{ allowed: true, at: 0, limits: [part] }] as never);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
      expect(String(err)).toMatch(/decisions\[0\]\.limits\[0\]/);
    }
  });
});
