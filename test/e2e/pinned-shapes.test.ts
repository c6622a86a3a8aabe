import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

// A consumer whose result arrays are all dead at a full GC (as between two bursts) must not lose
// the optimized code of `push`: V8 frees the hidden class of a shape nobody holds and deoptimizes
// every function that embedded it ("weak objects"). The reorder buffer pins its result shapes;
// this runs the built module under --trace-deopt and counts such deoptimizations of its functions.
const SCRIPT = `
import { ReorderBuffer } from ${JSON.stringify(join(root, 'dist', 'index.js'))};
const order = new Int32Array(200000);
for (let i = 0; i < order.length; i++) order[i] = i % 20 === 0 ? i + 3 : i % 20 === 3 ? i - 3 : i;
let released = 0;
for (let run = 0; run < 8; run++) {
  const buffer = new ReorderBuffer({ capacity: 64, gapTimeout: '1s' });
  for (let i = 0; i < order.length; i++) released += buffer.push(order[i], i, i).length;
  globalThis.gc();
}
console.log('released', released);
`;

describe('ReorderBuffer shapes survive full GCs', () => {
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('no "weak objects" deoptimization of the buffer code after gc() between bursts', () => {
    const out = execFileSync(
      process.execPath,
      ['--expose-gc', '--trace-deopt', '--input-type=module', '-e', SCRIPT],
      { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    expect(out).toContain(`released ${8 * 200_000}`);
    const lost = out
      .split('\n')
      .filter((line) => line.includes('reason: weak objects'))
      .filter((line) => /SharedFunctionInfo (result|push|#releaseRun)>/.test(line));
    expect(lost).toEqual([]);
  });
});
