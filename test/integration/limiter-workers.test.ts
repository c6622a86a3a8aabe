// 4 OS processes hammer one hot key per algorithm on Redis and on the 3-master cluster, with
// server time. Merging what they were admitted (by the decision's server time), no window ever
// holds more than the algorithm allows: limit for sliding-log and each aligned fixed window,
// burst + rate x interval for GCRA, and the documented bound for the bucketed sliding window.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

const run = promisify(execFile);
const worker = fileURLToPath(new URL('./fixtures/limiter-worker.mjs', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));
const WORKERS = 4;
const W = 200;
const L = 20;
const G = 50;
const BURST = 5;
const LIMITS = [
  { algorithm: 'sliding-log', limit: L, window: W },
  { algorithm: 'fixed-window', limit: L, window: W },
  { algorithm: 'gcra', limit: L, window: W, burst: BURST },
  { algorithm: 'sliding-window', limit: L, window: W, granularity: G },
];

type Admitted = [at: number, cost: number][];
const sum = (xs: Admitted, from: number, to: number) =>
  xs.reduce((a, [t, c]) => (t >= from && t <= to ? a + c : a), 0);

function check(algorithm: string, admitted: Admitted): void {
  admitted.sort((a, b) => a[0] - b[0]);
  for (const [t] of admitted) {
    if (algorithm === 'sliding-log') expect(sum(admitted, t - W + 1, t)).toBeLessThanOrEqual(L);
    if (algorithm === 'fixed-window') {
      const start = t - (t % W);
      expect(sum(admitted, start, start + W - 1)).toBeLessThanOrEqual(L);
    }
    if (algorithm === 'sliding-window') {
      const oldest = (Math.floor(t / G) - W / G) * G;
      const b = sum(admitted, oldest, oldest + G - 1);
      expect(sum(admitted, t - W + 1, t)).toBeLessThanOrEqual(L + Math.floor((b * (t % G)) / G));
    }
  }
  if (algorithm === 'gcra') {
    // Every interval between two admitted instants: at most burst + rate x its length.
    for (let i = 0; i < admitted.length; i++) {
      let cost = 0;
      for (let j = i; j < admitted.length; j++) {
        cost += (admitted[j] as [number, number])[1];
        const span = (admitted[j] as [number, number])[0] - (admitted[i] as [number, number])[0];
        expect(cost * W).toBeLessThanOrEqual(BURST * W + span * L);
      }
    }
  }
}

for (const target of ['standalone', 'cluster'] as const) {
  describe(`${WORKERS} processes on one hot key (${target})`, () => {
    const prefix = runPrefix(`limiter-workers-${target}`);
    const cleaner = target === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    afterAll(async () => {
      await cleanupPrefix(cleaner, prefix);
      cleaner.disconnect();
    });

    it('never admit more than the limit in any window', async () => {
      const where = target === 'cluster' ? { cluster: inject('clusterPorts') } : { url: REDIS_URL };
      const outputs = await Promise.all(
        Array.from({ length: WORKERS }, (_, i) =>
          run(
            process.execPath,
            [
              worker,
              JSON.stringify({ ...where, prefix, limits: LIMITS, durationMs: 1500, lanes: 16, seed: 7 + i }),
            ],
            { cwd: root, timeout: 60_000 },
          ),
        ),
      );
      const results = outputs.map(
        (o) => JSON.parse(o.stdout) as Record<string, { admitted: Admitted; refused: number }>,
      );
      for (const { algorithm } of LIMITS) {
        const admitted = results.flatMap((r) => r[algorithm]?.admitted ?? []);
        const refused = results.reduce((a, r) => a + (r[algorithm]?.refused ?? 0), 0);
        // The run was contended (most requests refused) and long enough to cover several windows.
        expect(refused, algorithm).toBeGreaterThan(admitted.length);
        expect(admitted.length, algorithm).toBeGreaterThan(3 * L);
        check(algorithm, admitted);
        // Several processes were admitted into one shared budget (the bounds above are cluster-wide).
        expect(
          results.filter((r) => (r[algorithm]?.admitted.length ?? 0) > 0).length,
          algorithm,
        ).toBeGreaterThan(1);
      }
    });
  });
}
