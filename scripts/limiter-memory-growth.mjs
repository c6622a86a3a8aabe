// The memory limiter's state under a stream of new keys (a flood of client ids or IPs, each seen
// once: its states must be swept, not kept until the process runs out of memory): N new keys per
// second of a fake clock, a 1 s fixed window on the store's clock, for S seconds; prints, per
// second, the keys the backend holds and the heap after a full GC, through the public limiter
// (createLimiter on memoryStore, as users run it) and the backend alone (its key count).
//
//   npm run build && node --expose-gc scripts/limiter-memory-growth.mjs [dist] [keysPerSecond] [seconds]
//
// `dist` (default ./dist) may be any compiled copy of the package, e.g. one of a change under test.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const dist = resolve(process.argv[2] ?? 'dist');
const perSecond = Number(process.argv[3] ?? 50_000);
const seconds = Number(process.argv[4] ?? 12);
const load = (path) => import(pathToFileURL(resolve(dist, path)).href);
const { createLimiter, memoryStore, FakeClock } = await load('index.js');
const { MemoryLimiterBackend } = await load('store/memory/limiter.js');
const { toSpec } = await load('limiter/options.js');

if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const heapMb = () => {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed / 1e6;
};

// Steps of 1 ms: perSecond / 1000 new keys each.
const clock = new FakeClock(0);
const backend = new MemoryLimiterBackend(clock);
const spec = toSpec({ algorithm: 'fixed-window', limit: 10, window: 1000 }, '');
const limiterClock = new FakeClock(0);
const limiter = createLimiter({
  store: memoryStore({ clock: limiterClock }),
  algorithm: 'fixed-window',
  limit: 10,
  window: '1s',
  blockCache: false,
});
const base = heapMb();
console.log(`dist ${dist}: ${perSecond} new keys/s, 1 s fixed window`);
console.log('second  backend keys  backend+limiter heap MB (above start)');
let n = 0;
for (let s = 1; s <= seconds; s++) {
  for (let ms = 0; ms < 1000; ms++) {
    clock.advance(1);
    limiterClock.advance(1);
    for (let i = 0; i < perSecond / 1000; i++, n++) {
      backend.take({ namespace: '|l:g', limits: [{ spec, subject: `new-${n}` }], cost: 1 });
      await limiter.take(`new-${n}`);
    }
  }
  console.log(
    `${String(s).padStart(6)}  ${String(backend.size).padStart(12)}  ${(heapMb() - base).toFixed(1).padStart(8)}`,
  );
}
