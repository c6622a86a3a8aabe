// `npm run bench` (builds first), or `node bench/run.mjs [name...] [--json] [--rounds=N] [--warmup=N]`.
// Runs each bench/<name>.bench.mjs in its own `node --expose-gc` child, one after the other, and
// prints one table per suite (or, with --json, one JSON document on stdout).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const SUFFIX = '.bench.mjs';

function parseArgs(argv) {
  const out = { names: [], json: false, options: {} };
  for (const arg of argv) {
    const m = /^--(\w+)(?:=(.*))?$/.exec(arg);
    if (!m) out.names.push(arg);
    else if (m[1] === 'json') out.json = true;
    else if (m[1] === 'rounds' || m[1] === 'warmup') {
      const n = Number(m[2]);
      if (!Number.isSafeInteger(n) || n < (m[1] === 'rounds' ? 1 : 0)) usage(`bad ${arg}`);
      out.options[m[1]] = n;
    } else if (m[1] === 'only') out.options.only = (m[2] ?? '').split(',');
    else if (m[1] === 'help') usage();
    else usage(`unknown option ${arg}`);
  }
  return out;
}

function usage(problem) {
  if (problem) console.error(problem);
  console.error(
    'usage: node bench/run.mjs [name...] [--json] [--rounds=5] [--warmup=2] [--only=substring,...]\n' +
      `suites: ${suites().join(', ')}`,
  );
  process.exit(problem ? 2 : 0);
}

function suites() {
  return readdirSync(here)
    .filter((f) => f.endsWith(SUFFIX))
    .map((f) => f.slice(0, -SUFFIX.length))
    .sort();
}

function machine() {
  const cpuinfo = (() => {
    try {
      return readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      return '';
    }
  })();
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  return {
    cpu: model.trim(),
    cores: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadavg: os.loadavg().map((l) => Number(l.toFixed(2))),
  };
}

const fmtOps = (n) => Math.round(n).toLocaleString('en');
const fmtRatio = (r) => `${r.toFixed(2)}x`;

function table(rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const right = new Set([2, 3, 4, 5, 6, 7]);
  const line = (r) =>
    r.map((cell = '', c) => (right.has(c) ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  ');
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(rows[0]), rule, ...rows.slice(1).map(line)].map((l) => l.trimEnd()).join('\n');
}

function render(result) {
  const rows = [
    ['comparison', 'side', 'ops/s', 'spread', 'ops/CPU-s', 'ratio', 'ratio CPU', 'target', 'verdict'],
  ];
  for (const c of result.comparisons) {
    c.sides.forEach((s, i) => {
      const first = i === 0;
      const verdict =
        c.met === null
          ? ''
          : c.met === c.cpuMet
            ? c.met
              ? 'met'
              : 'MISSED'
            : c.met
              ? 'met (wall only)'
              : 'MISSED (met by CPU)';
      rows.push([
        first ? c.name : '',
        s.id,
        fmtOps(s.median),
        `±${(((s.max - s.min) / 2 / s.median) * 100).toFixed(0)}%`,
        fmtOps(s.cpuMedian),
        first ? fmtRatio(c.ratio) : '',
        first ? fmtRatio(c.cpuRatio) : '',
        first ? (c.target === null ? '(info)' : `>= ${c.target}x`) : '',
        first ? verdict : '',
      ]);
    });
  }
  const notes = result.comparisons.flatMap((c) => [
    `  ${c.name}${c.note ? ` (${c.note})` : ''}`,
    ...c.sides.map((s) => `    ${s.id}: ${s.label}`),
  ]);
  return [
    `## ${result.suite}: ${result.title}`,
    `${result.workload}`,
    `median of ${result.rounds} interleaved rounds after ${result.warmup} warm-up rounds, ${result.seconds.toFixed(1)} s;`,
    "ops/s by wall time, spread = half the min..max range; ops/CPU-s by the client's CPU time (all its threads",
    "and the client processes a suite drives, not a server's); ratio = onceflow / baseline (of the medians)",
    '',
    table(rows),
    '',
    'cases:',
    ...notes,
    '',
  ].join('\n');
}

const args = parseArgs(process.argv.slice(2));
const known = suites();
for (const n of args.names) if (!known.includes(n)) usage(`no suite "${n}"`);
const chosen = args.names.length ? args.names : known;
const info = machine();
if (!args.json) {
  console.log(
    `onceflow benchmarks: ${info.cpu}, ${info.cores} cores, ${info.memoryGiB} GiB, node ${info.node} ` +
      `(${info.platform}), load average ${info.loadavg.join(' ')}\n`,
  );
}
const results = [];
const failed = [];
for (const name of chosen) {
  const child = spawnSync(
    process.execPath,
    ['--expose-gc', join(here, 'lib', 'child.mjs'), join(here, name + SUFFIX), JSON.stringify(args.options)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 2 ** 20, timeout: 10 * 60_000 },
  );
  if (child.status !== 0) {
    // One suite that cannot run (a server that is not there) must not hide the others' figures.
    failed.push(name);
    const why = child.error ? `: ${child.error.message}` : ' (its error is above)';
    console.error(`## ${name}: FAILED, exit ${child.status ?? child.signal}${why}\n`);
    continue;
  }
  const result = JSON.parse(child.stdout);
  results.push(result);
  if (!args.json) console.log(render(result));
}
const loadAfter = os.loadavg().map((l) => Number(l.toFixed(2)));
if (args.json) {
  const doc = { date: new Date().toISOString(), machine: info, loadAfter, failed, results };
  console.log(JSON.stringify(doc, null, 2));
} else {
  console.log(
    `load average after: ${loadAfter.join(' ')} (above ${info.cores}: other processes shared the CPUs)`,
  );
}
if (failed.length > 0) process.exitCode = 1;
