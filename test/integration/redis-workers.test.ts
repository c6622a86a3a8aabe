import { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import type { Delivery } from '../property/settlement-log.js';
import { adminClient, killClients, startDurableRedis } from '../support/durable-redis.js';
import { buildLog } from '../support/worker-log.js';
import { type Counts, runWorkers, verifyExactlyOnce, WORKERS } from '../support/worker-run.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const verify = (client: Redis | Cluster, prefix: string, players: Delivery[][], counts: Counts[]) =>
  verifyExactlyOnce(createRedisStore({ client, prefix }), players, counts);

const killWorkerConnections = (node: Redis) => killClients(node, 'onceflow-worker');

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
    const server = await startDurableRedis();
    const { port, url } = server;
    cleanups.push(() => server.remove());
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
        const admin = adminClient(port);
        try {
          for (let tick = 0; !done(); tick++) {
            await sleep(100);
            if (tick === 3) {
              await server.restart(200);
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
