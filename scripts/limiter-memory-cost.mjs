#!/usr/bin/env node
import { createLimiter } from 'onceflow';
// How far the memory limiter is from what the bench's work needs: ns of CPU per take for
// onceflow, RateLimiterMemory, and a hand-written floor (GCRA in one Map<key, {q, f}>, the same
// decision object and `limits` array onceflow returns, no validation, no multi-limit, no sweep),
// over the limiter bench's workload (5,010 keys, 10 hot), one take awaited at a time, a fresh
// limiter per run. Sides interleave round by round; median of the rounds.
// Usage: npm run build && node --expose-gc scripts/limiter-memory-cost.mjs [algorithm] [rounds]
// With --expose-gc each run starts after a full GC, as in bench/run.mjs; without it, runs follow
// each other with whatever the previous one left.
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { rlfTake } from '../bench/lib/rlf.mjs';
import { prng } from '../bench/lib/workload.mjs';

const N = 200_000;
const LIMIT = 50;
const WINDOW_MS = 1000;
const algorithm = process.argv[2] ?? 'gcra';
const rounds = Number(process.argv[3] ?? 8);
const random = prng(20261202);
const keys = Array.from({ length: N }, () =>
  random() < 0.1 ? `hot-${Math.floor(random() * 10)}` : `user-${Math.floor(random() * 5000)}`,
);

const sides = {
  onceflow() {
    const limiter = createLimiter({
      algorithm,
      limit: LIMIT,
      window: WINDOW_MS,
      blockCache: false,
      ...(algorithm === 'sliding-window' ? { granularity: 100 } : {}),
    });
    return async (key) => (await limiter.take(key)).allowed;
  },
  rlf: () => rlfTake(new RateLimiterMemory({ points: LIMIT, duration: WINDOW_MS / 1000 })),
  floor() {
    const states = new Map();
    const part = (allowed, remaining, resetAt, retryAfterMs) => ({
      allowed,
      remaining,
      resetAt,
      retryAfterMs,
      id: 'default',
      limit: LIMIT,
      windowMs: WINDOW_MS,
    });
    const take = (key) => {
      const now = Date.now();
      const s = states.get(key);
      const live = s !== undefined && s.q >= now;
      const q = live ? s.q : now;
      const f = live ? s.f : 0;
      const sum = f + WINDOW_MS;
      const carry = Math.floor(sum / LIMIT);
      const q2 = q + carry;
      const f2 = sum - carry * LIMIT;
      const ahead = (q2 - now) * LIMIT + f2;
      const allowed = ahead <= LIMIT * WINDOW_MS;
      if (allowed) {
        if (s === undefined) states.set(key, { q: q2, f: f2 });
        else {
          s.q = q2;
          s.f = f2;
        }
      }
      const p = allowed
        ? part(true, Math.floor((LIMIT * WINDOW_MS - ahead) / WINDOW_MS), q2 + 1, 0)
        : part(false, 0, q + 1, q - now);
      return Promise.resolve({
        allowed,
        limit: LIMIT,
        remaining: p.remaining,
        resetAt: p.resetAt,
        retryAfterMs: p.retryAfterMs,
        reason: allowed ? 'allowed' : 'limited',
        bound: 'default',
        at: now,
        limits: [p],
      });
    };
    return async (key) => (await take(key)).allowed;
  },
};

async function run(take) {
  let allowed = 0;
  for (let i = 0; i < N; i++) if (await take(keys[i])) allowed++;
  return allowed;
}

const names = Object.keys(sides);
const ns = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 ? names : [...names].reverse()) {
    const take = sides[name]();
    globalThis.gc?.();
    const cpu = process.cpuUsage();
    await run(take);
    const used = process.cpuUsage(cpu);
    ns[name].push(((used.user + used.system) * 1000) / N);
  }
}
const median = (a) => a.sort((x, y) => x - y)[a.length >> 1];
const m = Object.fromEntries(names.map((n) => [n, median(ns[n])]));
console.log(
  `${algorithm} (onceflow; the floor is always GCRA), ${globalThis.gc ? 'full GC before each run' : 'no forced GC'}, ${rounds} rounds:`,
);
console.table(
  names.map((n) => ({
    side: n,
    'ns/take': Math.round(m[n]),
    'vs RateLimiterMemory': `${(m.rlf / m[n]).toFixed(2)}x`,
  })),
);
