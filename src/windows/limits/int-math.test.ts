import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../core/clock.js';
import { MemoryLimiterBackend } from '../../store/memory/limiter.js';
import { ceilDiv, floorDiv } from './int-math.js';
import { STATE_SLACK_MS } from './time.js';

describe('integer division', () => {
  it('floorDiv and ceilDiv are exact for every safe integer (checked against BigInt)', () => {
    const safe = fc.oneof(
      fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
      fc.integer({ min: -1e6, max: 1e6 }),
    );
    fc.assert(
      fc.property(safe, fc.integer({ min: 1, max: 1e9 }), (a, b) => {
        const A = BigInt(a);
        const B = BigInt(b);
        const q = A / B; // truncates toward zero
        const r = A % B;
        const floor = r < 0n ? q - 1n : q;
        const ceil = r > 0n ? q + 1n : q;
        expect(floorDiv(a, b)).toBe(Number(floor));
        expect(ceilDiv(a, b)).toBe(Number(ceil));
      }),
      { numRuns: 5000 },
    );
    // Next to an integer quotient, where a rounded division would slip.
    expect(floorDiv(Number.MAX_SAFE_INTEGER, 3)).toBe(3002399751580330);
    expect(ceilDiv(Number.MAX_SAFE_INTEGER - 1, 3)).toBe(3002399751580330);
  });
});

describe('memory limiter backend', () => {
  it('drops expired state by itself, without a timer per key', () => {
    const clock = new FakeClock(0);
    const backend = new MemoryLimiterBackend(clock);
    const spec = { id: 'x', algorithm: 'fixed-window', limit: 5, windowMs: 1000, param: 0 } as const;
    for (let i = 0; i < 5000; i++)
      backend.take({ namespace: '|l:t', limits: [{ spec, subject: `${i}` }], cost: 1 });
    expect(backend.size).toBe(5000);
    // Expired at 1000, but kept for the slack (as Redis's TTL keeps a key): a clock that steps
    // back must find them again.
    clock.advance(1000);
    for (let i = 0; i < 5000; i++)
      backend.take({ namespace: '|l:t', limits: [{ spec, subject: 'hot' }], cost: 0 });
    expect(backend.size).toBe(5000); // a cost of 0 records nothing
    clock.advance(STATE_SLACK_MS);
    for (let i = 0; i < 5000; i++)
      backend.take({ namespace: '|l:t', limits: [{ spec, subject: 'hot' }], cost: 0 });
    expect(backend.size).toBe(0);
  });
});

describe('memory limiter backend slack', () => {
  it('keeps a state passed-in time wrote for the slack it was made with: 10 min for a shared store, 1 s for the local fallback', () => {
    const spec = { id: 'x', algorithm: 'fixed-window', limit: 5, windowMs: 1000, param: 0 } as const;
    const sizeAfter = (backend: MemoryLimiterBackend, clock: FakeClock) => {
      for (let i = 0; i < 2000; i++)
        backend.take({ namespace: '|l:ip', limits: [{ spec, subject: `${i}` }], cost: 1, now: clock.now() });
      clock.advance(5_000); // every window long over
      for (let i = 0; i < 2001; i++)
        backend.take({ namespace: '|l:ip', limits: [{ spec, subject: 'hot' }], cost: 0, now: clock.now() });
      return backend.size;
    };
    const shared = new FakeClock(1_000_000);
    expect(sizeAfter(new MemoryLimiterBackend(shared), shared)).toBe(2000);
    const local = new FakeClock(1_000_000);
    expect(sizeAfter(new MemoryLimiterBackend(local, STATE_SLACK_MS), local)).toBe(0);
  });
});
