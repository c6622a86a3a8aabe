#!/usr/bin/env node
// Latency of one Postgres limiter take: 8 workers on a pool of 8 connections, each awaiting its
// take before sending the next, 10,000 takes per algorithm (gcra and sliding-log, limit 100 per
// second, cost 1, the database's clock), over 1,000 subjects and then all on one subject (every
// take waits for the one before on that row's lock). Prints the mean and p50/p99 per take (call to
// answer) and takes per second. A fresh schema per run, dropped at the end.
// Usage: npm run build && node scripts/pg-limiter-latency.mjs [postgres-url]
import pg from 'pg';
import { createPostgresStore } from '../dist/postgres/index.js';

const url = process.argv[2] ?? 'postgres://postgres@127.0.0.1:5432/test';
const pool = new pg.Pool({ connectionString: url, max: 8 });
const schema = `t_lim_latency_${process.pid}`;
const store = createPostgresStore({ pool, schema });
const TAKES = 10_000;
const WORKERS = 8;

async function run(spec, subjects) {
  const calls = Array.from({ length: subjects }, (_, i) => ({ spec, subject: `s${i}` }));
  const times = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (next < TAKES) {
        const call = calls[next++ % subjects];
        const t = performance.now();
        await store.limiterTake({ namespace: '|l:bench', limits: [call], cost: 1 });
        times.push(performance.now() - t);
      }
    }),
  );
  const wall = performance.now() - started;
  times.sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  const at = (p) => times[Math.floor(p * (times.length - 1))];
  console.log(
    `${spec.algorithm.padEnd(12)} subjects ${String(subjects).padStart(5)}: mean ${mean.toFixed(3)} ms, p50 ${at(0.5).toFixed(3)}, p99 ${at(0.99).toFixed(3)}, ${Math.round((TAKES / wall) * 1000)} takes/s`,
  );
}

try {
  const gcra = { id: 'g', algorithm: 'gcra', limit: 100, windowMs: 1000, param: 100 };
  const log = { id: 'd', algorithm: 'sliding-log', limit: 100, windowMs: 1000, param: 0 };
  await store.limiterTake({ namespace: '|l:bench', limits: [{ spec: gcra, subject: 'warm' }], cost: 0 }); // migrates
  for (const spec of [gcra, log]) {
    await run(spec, 1000);
    await run(spec, 1);
  }
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
}
