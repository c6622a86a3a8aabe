#!/usr/bin/env node
// What one long signature costs ledger-apply.lua on Redis, in the shape that makes a naive
// duplicate search quadratic: on one owner, 'x' x N, then the same + '0', then + '1' (each
// shares an N-byte prefix with what the window holds). The script is called directly (EVALSHA,
// one entry per call, journal kept as a store keeps it by default), because the ledger refuses a
// signature over MAX_SIGNATURE_BYTES: that is the point of the bound, and what is measured here is
// the script's search alone. Then the worst case the ledger allows: a window of capacity `cap`
// filled with MAX_SIGNATURE_BYTES signatures that differ only in their last byte, and one apply
// more. Prints Redis µs per call (INFO commandstats, EVALSHA) and wall ms.
//
// It starts its own redis-server on a free port (a quadratic script would hold a shared server
// for seconds, and commandstats there count other clients' scripts too), unless a URL is given.
// `--script file.lua` measures another ledger-apply script (a whole script as Redis runs it), e.g.
// the one of a given commit, to compare a change of the search with what it replaces:
//   git show <commit>:src/redis/scripts.generated.ts | node -e "let t='';process.stdin.on('data',(d)=>t+=d).on('end',()=>process.stdout.write(JSON.parse(/ledgerApply: Object.freeze\(\{[\s\S]*?text: (\".*\"),\n/.exec(t)[1])))" > /tmp/old.lua
// Usage: npm run build && node scripts/signature-cost.mjs [redis-url] [--script file.lua] [--sizes 262144,1048576] [--capacity 64]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import * as onceflow from 'onceflow';
import { evalshaStats, unlinkPrefix } from '../bench/lib/redis.mjs';
import { scripts } from '../dist/redis/scripts.generated.js';

const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const [, value] = args.splice(i, 2);
  return value;
};
const scriptFile = option('--script');
const sizes = (option('--sizes') ?? '262144,1048576')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const capacity = Number(option('--capacity') ?? 64);
let url = args[0];
let server;
if (url === undefined) {
  const port = await freePort();
  server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', ''], {
    stdio: 'ignore',
  });
  url = `redis://127.0.0.1:${port}`;
}
let client;
for (let i = 0; client === undefined; i++) {
  // A server just started takes a few ms to listen: a fresh client per try, no reconnect loop.
  const c = new Redis(url, { lazyConnect: true, retryStrategy: () => null });
  c.on('error', () => {});
  try {
    await c.connect();
    client = c;
  } catch (err) {
    c.disconnect();
    if (i > 50) throw err;
    await new Promise((r) => setTimeout(r, 100));
  }
}
const text = scriptFile === undefined ? scripts.ledgerApply.text : readFileSync(scriptFile, 'utf8');
const sha = await client.script('LOAD', text);
const prefix = `onceflow-signature-cost:${process.pid}:`;
let call = 0;

/** One apply of `signature` on `owner` (capacity `cap`, one delta): Redis µs and wall ms. */
async function apply(owner, signature, cap) {
  const entry = [String(++call), signature, cap, '', 0, '', '', 1, 'coins', '1'];
  const keys = [`${prefix}{${owner}}:s`, `${prefix}{${owner}}:j`];
  const before = await evalshaStats(client);
  const started = process.hrtime.bigint();
  const reply = await client.evalsha(sha, 2, ...keys, JSON.stringify(entry), '', 'run');
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const after = await evalshaStats(client);
  return { outcome: JSON.parse(reply)[0][0], us: after.usec - before.usec, ms };
}

const row = (what, r) =>
  console.log(
    `${what.padEnd(58)} ${r.outcome.padEnd(8)} ${String(r.us).padStart(10)} µs ${r.ms.toFixed(1).padStart(9)} ms`,
  );

try {
  console.log(`script: ${scriptFile ?? 'dist (this build)'}; ${url}`);
  for (const n of sizes) {
    const base = 'x'.repeat(n);
    const owner = `path-${n}`;
    row(`${n} B: 'x' x N`, await apply(owner, base, 4));
    row(`${n} B: 'x' x N + '0'`, await apply(owner, `${base}0`, 4));
    row(`${n} B: 'x' x N + '1'  (3rd)`, await apply(owner, `${base}1`, 4));
    row(`${n} B: 'x' x N + '1'  again (duplicate)`, await apply(owner, `${base}1`, 4));
  }
  // The common case, for what the search costs there: settlement-sized signatures (~45 bytes),
  // capacity 4, one apply per call, over many owners (the same stream for every script measured).
  {
    const n = 3000;
    const before = await evalshaStats(client);
    for (let i = 0; i < n; i++) {
      await apply(`typical-${i % 500}`, `v1|room=lobby-${i % 7}|round=${i}|net=-300|final=false`, 4);
    }
    const after = await evalshaStats(client);
    // Each apply() reads the stats twice around its call: the script's own µs are the deltas'.
    row(`typical: ${n} applies, ~45 B signatures, capacity 4 (µs per apply)`, {
      outcome: '',
      us: ((after.usec - before.usec) / n).toFixed(2),
      ms: 0,
    });
  }
  // The largest signature the ledger accepts, in a full window of signatures sharing all but
  // their last byte: every apply searches `capacity` entries of MAX_SIGNATURE_BYTES.
  const max = onceflow.LIMITS?.signatureBytes ?? 4096; // a dist without LIMITS has no bound: 4096 then
  // The last 4 bytes tell them apart (a window of up to 10 000), the rest is one shared prefix.
  const head = 'x'.repeat(max - 4);
  const variant = (i) => head + String(i).padStart(4, '0');
  const owner = 'max';
  let worst = { us: 0, ms: 0, outcome: '' };
  for (let i = 0; i < capacity; i++) {
    const r = await apply(owner, variant(i), capacity);
    if (r.us > worst.us) worst = r;
  }
  row(`${max} B signatures (the bound), window of ${capacity}: worst fill`, worst);
  row('  a new one into the full window', await apply(owner, variant(capacity), capacity));
  row('  the newest again (duplicate)', await apply(owner, variant(capacity), capacity));
} finally {
  await unlinkPrefix(client, prefix);
  client.disconnect();
  server?.kill('SIGKILL');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
