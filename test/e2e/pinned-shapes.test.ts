import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

// A consumer whose result arrays are all dead at a full GC (as between two bursts) must not lose
// the optimized code of `push`: V8 frees the hidden class of a shape nobody holds and deoptimizes
// every function that embedded it ("weak objects"). The reorder buffer pins its result shapes;
// this runs the built module under --trace-deopt and counts such deoptimizations of its functions.
// (Each script keeps its objects in a function scope: a block-scoped variable still in scope at the
// gc() would keep them alive and the test could not fail.)
const SCRIPT = `
import { ReorderBuffer } from ${JSON.stringify(join(root, 'dist', 'index.js'))};
const order = new Int32Array(200000);
for (let i = 0; i < order.length; i++) order[i] = i % 20 === 0 ? i + 3 : i % 20 === 3 ? i - 3 : i;
let released = 0;
function burst() {
  const buffer = new ReorderBuffer({ capacity: 64, gapTimeout: '1s' });
  for (let i = 0; i < order.length; i++) released += buffer.push(order[i], i, i).length;
}
for (let run = 0; run < 8; run++) {
  burst();
  globalThis.gc();
}
console.log('released', released);
`;

// The same for limiters: a program that drops its last limiter (a tenant closed, a limiter per
// request batch) must not lose the optimized code of take() at the next full GC.
const LIMITER_SCRIPT = `
import { createLimiter } from ${JSON.stringify(join(root, 'dist', 'index.js'))};
let allowed = 0;
// The limiter lives in this function only: dead at the gc() that follows each burst.
async function burst(algorithm) {
  const limiter = createLimiter({ algorithm, limit: 50, window: 1000, blockCache: false });
  for (let i = 0; i < 40000; i++) if ((await limiter.take('user-' + (i % 500))).allowed) allowed++;
}
for (const algorithm of ['gcra', 'fixed-window', 'sliding-window', 'sliding-log']) {
  for (let run = 0; run < 3; run++) {
    await burst(algorithm);
    globalThis.gc();
  }
}
console.log('allowed', allowed > 0);
`;

// And for ledgers and windows on the memory store, each dropped after its burst.
const LEDGER_SCRIPT = `
import { createLedger, SignatureWindow } from ${JSON.stringify(join(root, 'dist', 'index.js'))};
let applied = 0;
async function burst() {
  const ledger = createLedger({ capacity: 4 });
  for (let i = 0; i < 30000; i++) {
    const r = await ledger.apply({ owner: 'p' + (i % 300), signature: 's' + (i % 7), deltas: { coins: 5 }, scope: 'room' });
    if (r.outcome === 'applied') applied++;
  }
}
function windows() {
  const window = new SignatureWindow({ capacity: 4 });
  for (let i = 0; i < 100000; i++) window.admit('s' + (i % 50), i);
}
for (let run = 0; run < 6; run++) {
  await burst();
  windows();
  globalThis.gc();
}
console.log('applied', applied > 0);
`;

/** Lines of a --trace-deopt run that threw away optimized code of `functions` for a dead shape. */
function weakDeopts(script: string, functions: RegExp, finished: string): string[] {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--trace-deopt', '--input-type=module', '-e', script],
    { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  return out
    .split('\n')
    .filter((line) => line.includes('reason: weak objects'))
    .filter((line) => functions.test(line))
    .concat(out.includes(finished) ? [] : [`the script did not print "${finished}"`]);
}

describe('shapes survive full GCs', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('ReorderBuffer: no "weak objects" deoptimization of its code after gc() between bursts', () => {
    expect(
      weakDeopts(SCRIPT, /SharedFunctionInfo (result|push|#releaseRun)>/, `released ${8 * 200_000}`),
    ).toEqual([]);
  });

  it('limiter: no "weak objects" deoptimization of take() and the memory store after dropping a limiter', () => {
    expect(
      weakDeopts(
        LIMITER_SCRIPT,
        /SharedFunctionInfo (take|limiterTake|#settle|#entryOf|#lookup|#charge|#keep|decide|#decisionOf|#callsOf|#subjectsOf|verdict|commit)>/,
        'allowed true',
      ),
    ).toEqual([]);
  });

  it('ledger and window: no "weak objects" deoptimization of apply() and admit() after dropping them', () => {
    expect(
      weakDeopts(
        LEDGER_SCRIPT,
        /SharedFunctionInfo (apply|#apply|#toCommand|#push|admit|has|#evictOldest|ledgerApply)>/,
        'applied true',
      ),
    ).toEqual([]);
  });

  it('importing onceflow with Date.now mocked to nonsense neither throws nor crashes the process later', () => {
    const script = `
Date.now = () => undefined;
await import(${JSON.stringify(join(root, 'dist', 'index.js'))});
await new Promise((resolve) => setTimeout(resolve, 50));
console.log('alive');
`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('alive');
  });
});
