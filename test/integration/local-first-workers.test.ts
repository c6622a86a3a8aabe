// Local-first limits across OS processes on one Redis (and the 3-master cluster): 4 processes
// take one hot key through leased shares; merging what they were admitted, no window holds more
// than limit + nodes x share (the bound derived in src/limiter/local-first.ts). A process killed
// while it holds a share loses at most that share: the rest of the window's budget is still there
// for the others, and the whole limit is back once the window has passed.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createLimiter } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

const run = promisify(execFile);
const worker = fileURLToPath(new URL('./fixtures/local-first-worker.mjs', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));
const NODES = 4;
const W = 300;
const L = 60;
const SHARE = 5;

type Admitted = [at: number, cost: number][];
interface Output {
  admitted: Admitted;
  refused: number;
  leases: { granted: number; returned: number; points: number };
}

// The most cost admitted in any window [t - W + 1, t] (sliding-log) or aligned window (fixed-window).
function worst(algorithm: string, admitted: Admitted): number {
  admitted.sort((a, b) => a[0] - b[0]);
  let most = 0;
  for (const [t] of admitted) {
    const from = algorithm === 'fixed-window' ? t - (t % W) : t - W + 1;
    const to = algorithm === 'fixed-window' ? from + W - 1 : t;
    most = Math.max(
      most,
      admitted.reduce((a, [u, c]) => (u >= from && u <= to ? a + c : a), 0),
    );
  }
  return most;
}

for (const target of ['standalone', 'cluster'] as const) {
  describe(`local-first: ${NODES} processes on one hot key (${target})`, () => {
    const prefix = runPrefix(`local-first-${target}`);
    const cleaner = target === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    afterAll(async () => {
      await cleanupPrefix(cleaner, prefix);
      cleaner.disconnect();
    });

    for (const algorithm of ['sliding-log', 'fixed-window'] as const) {
      it(`${algorithm}: never more than limit + nodes x share in any window`, async () => {
        const where = target === 'cluster' ? { cluster: inject('clusterPorts') } : { url: REDIS_URL };
        const outputs = await Promise.all(
          Array.from({ length: NODES }, (_, i) =>
            run(
              process.execPath,
              [
                worker,
                JSON.stringify({
                  ...where,
                  prefix: `${prefix}${algorithm}:`,
                  limit: { algorithm, limit: L, window: W },
                  localFirst: { nodes: NODES, share: SHARE, hotAfter: 2 },
                  durationMs: 1500,
                  lanes: 8,
                  seed: 11 + i,
                }),
              ],
              { cwd: root, timeout: 60_000 },
            ),
          ),
        );
        const results = outputs.map((o) => JSON.parse(o.stdout) as Output);
        const admitted = results.flatMap((r) => r.admitted);
        // Contended (most takes refused), over several windows, with shares leased (a saturated key
        // leases less: a share the store refuses turns a node's takes exact for a lease period),
        // and several processes admitted into the one budget.
        expect(results.reduce((a, r) => a + r.refused, 0)).toBeGreaterThan(admitted.length);
        expect(admitted.length).toBeGreaterThan(3 * L);
        expect(results.reduce((a, r) => a + r.leases.granted, 0)).toBeGreaterThan(0);
        expect(results.filter((r) => r.admitted.length > 0).length).toBeGreaterThan(1);
        expect(worst(algorithm, admitted)).toBeLessThanOrEqual(L + NODES * SHARE);
      });
    }
  });
}

describe('local-first: a process killed holding a share (standalone)', () => {
  const prefix = runPrefix('local-first-kill');
  const client = new Redis(REDIS_URL);
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });

  it('loses at most its share, counted once; the limit is whole again after the window', async () => {
    const limit = { algorithm: 'sliding-log' as const, limit: 100, window: 3000 };
    const child = spawn(
      process.execPath,
      [
        worker,
        JSON.stringify({
          url: REDIS_URL,
          prefix,
          limit,
          localFirst: { nodes: 2, share: 10, hotAfter: 1 },
          hold: 3,
        }),
      ],
      { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let text = '';
    child.stdout.on('data', (b: Buffer) => {
      text += b.toString();
    });
    while (!text.includes('\n')) await once(child.stdout, 'data');
    const held = JSON.parse(text) as Output;
    child.kill('SIGKILL');
    await once(child, 'exit');
    const used = held.admitted.length;
    const leased = held.leases.points;
    // The survivor takes one by one from the store (a plain limiter on the same key space).
    const survivor = createLimiter({ store: createRedisStore({ client, prefix }), name: 'hot', ...limit });
    let admitted = 0;
    while ((await survivor.take('hot-key')).allowed) admitted++;
    // What the dead node leased and did not use is lost, and only that: at most one share.
    expect(limit.limit - used - admitted).toBe(leased - used);
    expect(leased - used).toBeLessThanOrEqual(10);
    expect(leased - used).toBeGreaterThan(0);
    // Once its share left the window, the whole limit is there again.
    await new Promise((r) => setTimeout(r, 3100));
    let later = 0;
    while ((await survivor.take('hot-key')).allowed) later++;
    expect(later).toBe(limit.limit);
  }, 30_000);
});
