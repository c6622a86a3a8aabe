import { rmSync } from 'node:fs';
import { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import type { Delivery } from '../property/settlement-log.js';
import { startRedis } from '../support/redis-servers.js';
import { buildLog } from '../support/worker-log.js';
import { type Counts, runWorkers, verifyExactlyOnce, WORKERS } from '../support/worker-run.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const verify = (client: Redis | Cluster, prefix: string, players: Delivery[][], counts: Counts[]) =>
  verifyExactlyOnce(createRedisStore({ client, prefix }), players, counts);

async function killWorkerConnections(node: Redis): Promise<number> {
  const list = (await node.client('LIST')) as string;
  const ids = list
    .split('\n')
    .filter((l) => l.includes('name=onceflow-worker'))
    .map((l) => /id=(\d+)/.exec(l)?.[1])
    .filter((id): id is string => id !== undefined);
  for (const id of ids) await node.client('KILL', 'ID', id).catch(() => 0);
  return ids.length;
}

describe(`${WORKERS} OS processes apply shuffled copies of one delivery log`, () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups) await c();
  });

  it('on one Redis: balances, journal and per-room totals are exact', async () => {
    const client = new Redis(REDIS_URL);
    const prefix = runPrefix('workers');
    cleanups.push(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });
    const players = buildLog(1);
    const counts = await runWorkers<Counts>('apply-worker.mjs', { url: REDIS_URL, prefix }, players, 120_000);
    await verify(client, prefix, players, counts);
  });

  it('on the 3-master cluster, with SCRIPT FLUSH and CLIENT KILL during the run: still exact', async () => {
    const ports = inject('clusterPorts');
    const client = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));
    const admins = ports.map((port) => new Redis(port, '127.0.0.1'));
    const prefix = runPrefix('workers-cluster');
    cleanups.push(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
      for (const a of admins) a.disconnect();
    });
    const players = buildLog(2);
    let kills = 0;
    let flushes = 0;
    const counts = await runWorkers<Counts>(
      'apply-worker.mjs',
      { cluster: ports, paceMs: 1, prefix },
      players,
      120_000,
      async (done) => {
        for (let tick = 0; !done(); tick++) {
          await sleep(100);
          for (const admin of admins) {
            await admin.script('FLUSH');
            flushes++;
            if (tick % 3 === 2) kills += await killWorkerConnections(admin);
          }
        }
      },
    );
    expect(flushes).toBeGreaterThan(0);
    expect(kills).toBeGreaterThan(0);
    await verify(client, prefix, players, counts);
  });

  it('on a Redis with AOF that is killed (SIGKILL) and restarted mid-run, with faults: nothing lost, nothing twice', async () => {
    const aof = ['--appendonly', 'yes', '--appendfsync', 'always'];
    let server = await startRedis(aof);
    const { port, dir } = server;
    const url = `redis://127.0.0.1:${port}`;
    cleanups.push(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const prefix = runPrefix('workers-aof');
    const players = buildLog(3);
    let restarts = 0;
    let kills = 0;
    const counts = await runWorkers<Counts>(
      'apply-worker.mjs',
      { url, paceMs: 1, prefix },
      players,
      120_000,
      async (done) => {
        const admin = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null, retryStrategy: () => 50 });
        admin.on('error', () => {}); // refused while the server restarts: expected
        try {
          for (let tick = 0; !done(); tick++) {
            await sleep(100);
            if (tick === 3) {
              await server.stop();
              await sleep(200);
              server = await startRedis(aof, { port, dir });
              restarts++;
            } else if (!done()) {
              await admin.script('FLUSH');
              kills += await killWorkerConnections(admin);
            }
          }
        } finally {
          admin.disconnect();
        }
      },
    );
    expect(restarts).toBe(1);
    expect(kills).toBeGreaterThan(0);
    const client = new Redis(url);
    try {
      await verify(client, prefix, players, counts);
    } finally {
      client.disconnect();
    }
  });
});
