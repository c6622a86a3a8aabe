#!/usr/bin/env node
// What the Postgres ledger costs, measured on a real server (build first: `npx tsc -p tsconfig.build.json`):
//   apply    the latency of one apply with 8 connections busy (10 000 applies over 1 000 owners,
//            one delta, a scope and an order each): mean, p50, p99 and applies per second
//   cleanup  one journal clean-up call walking 10 000 owners with nothing past the retention
//            (the default limit, 1000 rows, walks 10 000 owners: CLEANUP_SCAN_PER_ROW in ledger-ops.ts)
// Usage: node scripts/pg-ledger-cost.mjs [apply|cleanup] (default: both). ONCEFLOW_POSTGRES_URL
// picks the database (default postgres://postgres@127.0.0.1:5432/test). Works in a schema of its
// own, dropped at the end.
import pg from 'pg';
import { createLedger } from '../dist/index.js';
import { createPostgresStore, migrate } from '../dist/postgres/index.js';

const url = process.env.ONCEFLOW_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const which = process.argv[2];
const schema = `t_ledger_cost_${process.pid}`;
const pool = new pg.Pool({ connectionString: url, max: 8 });

try {
  await migrate({ pool, schema });
  if (which === undefined || which === 'apply') await applyCost();
  if (which === undefined || which === 'cleanup') await cleanupCost();
} finally {
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
}

async function applyCost() {
  const ledger = createLedger({ store: createPostgresStore({ pool, schema }), capacity: 4, name: 'cost' });
  // Every connection opened and every statement prepared before the clock starts.
  await Promise.all(
    Array.from({ length: 64 }, (_v, i) =>
      ledger.apply({ owner: `w${i}`, signature: 'warm', deltas: { coins: 1 } }),
    ),
  );
  const total = 10_000;
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < total) {
        const i = next++;
        const t = performance.now();
        await ledger.apply({
          owner: `p${i % 1000}`,
          signature: `s${i}`,
          deltas: { coins: i },
          scope: `r${i % 10}`,
          order: i,
        });
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const mean = latencies.reduce((t, v) => t + v, 0) / latencies.length;
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))].toFixed(2);
  console.log(
    `apply: ${total} applies on 8 connections: mean ${mean.toFixed(2)} ms, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, ${Math.round(total / seconds)}/s`,
  );
}

async function cleanupCost() {
  await pool.query(
    `INSERT INTO "${schema}".ledger_owner (ledger, owner, seq) SELECT 'c', 'owner-' || g, 3 FROM generate_series(1, 10000) g`,
  );
  const runs = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await pool.query(`SELECT "${schema}".ledger_cleanup(5, 1000, 10000)`);
    runs.push(performance.now() - t);
  }
  console.log(`cleanup: one call over 10 000 owners: ${runs.map((ms) => ms.toFixed(1)).join(', ')} ms`);
}
