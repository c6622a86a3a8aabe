// Where a gateway node spends its CPU under the ws-gateway suite's round-trip load:
// `node bench/lib/ws-profile.mjs [memory|redis] [messages per client]` (after `npm run build`).
// Starts one gateway process with --cpu-prof, drives 50 clients from a load process, and prints
// the top 10 functions by self time from the profile it wrote.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { unlinkPrefix } from './redis.mjs';
import { ask, startLoad, startNode, stopLoad, stopNode } from './ws-ipc.mjs';

const store = process.argv[2] ?? 'memory';
const messages = Number(process.argv[3] ?? 400);
const dir = mkdtempSync(join(tmpdir(), 'ws-prof-'));
process.env.BENCH_WS_PROF = dir;
const prefix = `bench-ws-prof:${process.pid}:`;

const node = await startNode({ kind: 'gateway', store, prefix });
const load = startLoad();
await ask(load, { type: 'open', kind: 'protocol', url: node.url, clients: 50, tag: 'prof' });
const t0 = performance.now();
const { ops } = await ask(load, { type: 'run', count: messages });
const seconds = (performance.now() - t0) / 1000;
await ask(load, { type: 'close' });
await stopLoad(load);
await stopNode(node);
if (store === 'redis') {
  const client = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  await unlinkPrefix(client, prefix);
  client.disconnect();
}

const [file] = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
rmSync(dir, { recursive: true, force: true });
// Self time per node: samples x their intervals (timeDeltas[i] is the time before sample i).
const self = new Map();
for (const [i, id] of profile.samples.entries())
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
const byFunction = new Map();
const byFile = new Map();
let total = 0;
for (const n of profile.nodes) {
  const us = self.get(n.id) ?? 0;
  total += us;
  const f = n.callFrame;
  const file = f.url ? f.url.replace(/^.*\/(node_modules|dist)\//, '$1/') : '(native)';
  const where = f.url ? `${file}:${f.lineNumber + 1}` : '';
  const key = `${f.functionName || '(anonymous)'} ${where}`.trim();
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  if (key !== '(idle)') byFile.set(file, (byFile.get(file) ?? 0) + us);
}
const busy = total - (byFunction.get('(idle)') ?? 0);
console.log(
  `gateway on the ${store} store: ${ops} round trips in ${seconds.toFixed(2)} s (${Math.round(ops / seconds)}/s); ` +
    `profile ${(total / 1e3).toFixed(0)} ms, ${(busy / 1e3).toFixed(0)} ms not idle`,
);
for (const [key, us] of [...byFunction]
  .filter(([key]) => key !== '(idle)')
  .sort((a, b) => b[1] - a[1])
  .slice(0, 10))
  console.log(
    `${(us / 1e3).toFixed(1).padStart(8)} ms  ${((us / busy) * 100).toFixed(1).padStart(5)}%  ${key}`,
  );
console.log('by file:');
for (const [file, us] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 10))
  console.log(
    `${(us / 1e3).toFixed(1).padStart(8)} ms  ${((us / busy) * 100).toFixed(1).padStart(5)}%  ${file}`,
  );
