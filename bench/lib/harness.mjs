// The measuring side of the benchmarks. A suite runs in its own child process (see run.mjs) with
// --expose-gc, so one suite's JIT state and garbage never leak into another's figures.

/**
 * @typedef {object} Side
 * @property {string} id         Short name: 'onceflow' or the baseline's.
 * @property {string} label      What exactly is called.
 * @property {(shared: any) => any} prepare   Fresh state for one timed run (not timed).
 * @property {(state: any) => number | Promise<number> | RunResult | Promise<RunResult>} run  The timed
 *   run; returns the op count (or a RunResult, when the work ran in other processes too).
 * @property {(state: any) => void | Promise<void>} [dispose]  Releases a run's state after it
 *   was timed (e.g. a limiter's pending timers, which would keep it and its Map alive).
 * @property {(shared: any) => void | Promise<void>} [verify]  One untimed pass that checks the
 *   side did the work it claims (e.g. every repeat answered `duplicate`); throws otherwise.
 *
 * @typedef {object} RunResult
 * @property {number} ops
 * @property {number} cpuUs  CPU time (µs) the run spent in processes other than this one (the
 *   client processes it drove), added to this process's.
 *
 * @typedef {object} Comparison
 * @property {string} name
 * @property {string} [note]
 * @property {[Side, Side]} sides  sides[0] is onceflow, sides[1] the baseline.
 * @property {number} [target]     Required ratio sides[0] / sides[1] (medians), if any.
 *
 * @typedef {object} Suite  The default export of a bench/<name>.bench.mjs file.
 * @property {string} name
 * @property {string} title
 * @property {() => any} setup                  Builds the shared workload (not timed).
 * @property {(shared: any) => Comparison[]} comparisons
 * @property {(shared: any) => string} [describe]  One line about the workload, for the report.
 * @property {(shared: any) => void | Promise<void>} [teardown]  Closes what setup opened.
 */

const now = () => process.hrtime.bigint();
const collect = typeof globalThis.gc === 'function' ? () => globalThis.gc() : () => {};

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function timed(side, shared) {
  const state = await side.prepare(shared);
  // Collect the previous run's garbage now, so it is not charged to this run. Garbage this run
  // makes is collected on its own clock: that is part of its cost.
  collect();
  const c0 = process.cpuUsage();
  const t0 = now();
  const result = await side.run(state);
  const ns = Number(now() - t0);
  const cpu = process.cpuUsage(c0);
  const ops = typeof result === 'number' ? result : result.ops;
  // CPU time of the whole process (every thread: GC helpers included). Unlike wall time it does
  // not count the time other processes held the CPU, so it stays meaningful on a busy machine.
  const cpuUs = cpu.user + cpu.system + (typeof result === 'number' ? 0 : result.cpuUs);
  await side.dispose?.(state);
  return { ops, ns, opsPerSec: (ops * 1e9) / ns, opsPerCpuSec: (ops * 1e6) / cpuUs };
}

/**
 * Runs every comparison of a suite: verify each side once, `warmup` interleaved runs, then
 * `rounds` interleaved measured runs (A B, B A, A B, ...: each round flips which side goes first,
 * so drift and noise hit both). Reports the median ops/s of each side and the ratio of medians,
 * by wall time and by process CPU time.
 */
export async function runSuite(suite, { rounds = 5, warmup = 2, only, log = () => {} } = {}) {
  const t0 = now();
  log(`${suite.name}: setting up`);
  const shared = await suite.setup();
  try {
    return await compare(suite, shared, { rounds, warmup, only, log, t0 });
  } finally {
    // Close what setup opened (a client, a server), or the child process would never exit.
    await suite.teardown?.(shared);
  }
}

async function compare(suite, shared, { rounds, warmup, only, log, t0 }) {
  const comparisons = [];
  for (const cmp of suite.comparisons(shared)) {
    if (only && !only.some((o) => cmp.name.includes(o))) continue;
    log(`${suite.name}: ${cmp.name}: verify`);
    for (const side of cmp.sides) await side.verify?.(shared);
    const samples = cmp.sides.map(() => []);
    const cpuSamples = cmp.sides.map(() => []);
    for (let r = -warmup; r < rounds; r++) {
      const order = (r & 1) === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const s = await timed(cmp.sides[i], shared);
        if (r >= 0) {
          samples[i].push(s.opsPerSec);
          cpuSamples[i].push(s.opsPerCpuSec);
        }
      }
      log(`${suite.name}: ${cmp.name}: ${r < 0 ? 'warmup' : `round ${r + 1}/${rounds}`}`);
    }
    const sides = cmp.sides.map((side, i) => ({
      id: side.id,
      label: side.label,
      median: median(samples[i]),
      min: Math.min(...samples[i]),
      max: Math.max(...samples[i]),
      samples: samples[i],
      cpuMedian: median(cpuSamples[i]),
      cpuSamples: cpuSamples[i],
    }));
    const ratio = sides[0].median / sides[1].median;
    const cpuRatio = sides[0].cpuMedian / sides[1].cpuMedian;
    comparisons.push({
      name: cmp.name,
      note: cmp.note,
      sides,
      ratio,
      cpuRatio,
      target: cmp.target ?? null,
      met: cmp.target === undefined ? null : ratio >= cmp.target,
      cpuMet: cmp.target === undefined ? null : cpuRatio >= cmp.target,
    });
  }
  return {
    suite: suite.name,
    title: suite.title,
    workload: suite.describe?.(shared) ?? '',
    rounds,
    warmup,
    seconds: Number(now() - t0) / 1e9,
    comparisons,
  };
}
