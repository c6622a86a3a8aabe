// Consumer processes killed with SIGKILL at random points and started again, and a Redis restarted
// (AOF) with CLIENT KILL mid-run: afterwards every event was booked exactly once, nothing is left
// pending, and the dead-letter stream holds exactly the poison events planted. The booking and the
// XACK are one script, so a kill lands before both or after both; a killed consumer's entries are
// reclaimed by the others.
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import { startRedis } from '../../src/testing/redis-servers.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const worker = fileURLToPath(new URL('./fixtures/streams-consumer-worker.mjs', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const shared = new Redis(REDIS_URL);
const prefix = runPrefix('streams-kill');
afterAll(async () => {
  await cleanupPrefix(shared, prefix);
  shared.disconnect();
});

// 3 processes on 2 shared cores: 8 000 events take longer than the 12 kills (~3 s), so every kill
// lands mid-run, and the whole run stays within ~10 s of `npm test`. The full-size load (4 processes
// x 200,000 events) runs with ONCEFLOW_STREAMS_WORKERS=4 ONCEFLOW_STREAMS_EVENTS=200000 (see
// docs/streams.md).
const WORKERS = Number(process.env['ONCEFLOW_STREAMS_WORKERS'] ?? 3);
const EVENTS = Number(process.env['ONCEFLOW_STREAMS_EVENTS'] ?? 8000);
const OWNERS = 40;
const POISON = 8;

interface Run {
  readonly stream: string;
  readonly keyPrefix: string;
  readonly expected: Map<string, bigint>;
  readonly poisonIds: Set<string>;
}

async function publishEvents(client: Redis, name: string): Promise<Run> {
  const run: Run = {
    stream: `${prefix}${name}`,
    keyPrefix: `${prefix}${name}:l:`,
    expected: new Map(),
    poisonIds: new Set(),
  };
  let pipeline = client.pipeline();
  for (let i = 0; i < EVENTS; i++) {
    const owner = `p${i % OWNERS}`;
    const poison = i % Math.floor(EVENTS / POISON) === 7;
    const id = `ev-${i}`;
    if (poison) run.poisonIds.add(id);
    else run.expected.set(owner, (run.expected.get(owner) ?? 0n) + BigInt(i));
    pipeline.xadd(run.stream, '*', 'e', jsonSerializer.serialize({ owner, amount: i, poison }), 'i', id);
    if (i % 500 === 499) {
      await pipeline.exec();
      pipeline = client.pipeline();
    }
  }
  await pipeline.exec();
  expect(run.poisonIds.size).toBe(POISON);
  return run;
}

function workers(url: string, run: Run) {
  const procs: ChildProcess[] = [];
  const exits: Promise<unknown>[] = [];
  const launch = (slot: number) => {
    const config = { url, stream: run.stream, consumer: `w${slot}`, prefix: run.keyPrefix, claimIdle: 400 };
    const child = spawn(process.execPath, [worker, JSON.stringify(config)], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    procs[slot] = child;
    exits.push(new Promise((resolve) => child.once('exit', resolve)));
  };
  for (let slot = 0; slot < WORKERS; slot++) launch(slot);
  return {
    async kill(slot: number) {
      const child = procs[slot] as ChildProcess;
      child.kill('SIGKILL');
      await new Promise((resolve) =>
        child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve),
      );
      launch(slot);
    },
    async stop() {
      for (const child of procs) child.kill('SIGTERM');
      await Promise.all(exits);
    },
  };
}

/** Every entry delivered (the group's lag 0) and acked (nothing pending). */
async function settled(client: Redis, run: Run): Promise<boolean> {
  const flat = ((await client.call('XINFO', 'GROUPS', run.stream)) as unknown[][])[0] ?? [];
  const lag = flat[flat.indexOf('lag') + 1];
  const summary = (await client.call('XPENDING', run.stream, 'g')) as [number, ...unknown[]];
  return lag === 0 && summary[0] === 0;
}

async function waitSettled(client: Redis, run: Run, deadline: number): Promise<void> {
  for (;;) {
    const done = await settled(client, run).catch(() => false);
    if (done || Date.now() > deadline) break;
    await sleep(100);
  }
  expect(await settled(client, run)).toBe(true);
}

async function verify(client: Redis, run: Run): Promise<void> {
  const ledger = createLedger({ store: createRedisStore({ client, prefix: run.keyPrefix }), capacity: 64 });
  for (const [owner, coins] of run.expected) {
    expect(await ledger.balances(owner)).toEqual({ coins });
    const journal = await ledger.journal({ owner });
    const poisoned = [...run.poisonIds].filter(
      (id) => Number(id.slice(3)) % OWNERS === Number(owner.slice(1)),
    );
    expect(journal.length).toBe(EVENTS / OWNERS - poisoned.length);
    expect(new Set(journal.map((j) => j.signature)).size).toBe(journal.length);
  }
  const dead = (await client.call('XRANGE', `${run.stream}:dead`, '-', '+')) as [string, string[]][];
  const deadIds = dead.map(([, f]) => f[f.indexOf('id') + 1]);
  expect(new Set(deadIds)).toEqual(run.poisonIds);
  expect(deadIds).toHaveLength(POISON);
  for (const [, f] of dead) expect(f.slice(0, 2)).toEqual(['reason', 'max-deliveries']);
}

describe('stream consumers under kills and restarts (ledger path)', () => {
  it('SIGKILL of consumers at random points: every event booked once, nothing pending, poison dead-lettered', async () => {
    const run = await publishEvents(shared, 'killed');
    const w = workers(REDIS_URL, run);
    const deadline = Date.now() + 120_000;
    // Kill one process at a random point every 150-350 ms, restart it at once, 12 times.
    for (let kills = 0; kills < 12; kills++) {
      await sleep(150 + Math.floor(Math.random() * 200));
      await w.kill(Math.floor(Math.random() * WORKERS));
    }
    // The kills landed while work was in flight: the run was not over when the last one did.
    expect(await settled(shared, run)).toBe(false);
    await waitSettled(shared, run, deadline);
    await w.stop();
    await verify(shared, run);
  }, 180_000);

  it('a Redis restart (AOF) and CLIENT KILL mid-run: the same result', async () => {
    // A server of this test's own: it is killed and started again on the same port and AOF.
    const flags = ['--appendonly', 'yes', '--appendfsync', 'always'];
    let redis = await startRedis(flags);
    const url = `redis://127.0.0.1:${redis.port}`;
    const client = new Redis(url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    client.on('error', () => {}); // killed with the others; it reconnects
    try {
      const run = await publishEvents(client, 'restarted');
      const w = workers(url, run);
      const deadline = Date.now() + 120_000;
      await sleep(800);
      // Every consumer connection dropped at once (the test's own client too: it reconnects).
      await client.call('CLIENT', 'KILL', 'TYPE', 'normal').catch(() => undefined);
      await sleep(800);
      // The server crashes (SIGKILL) and comes back from its AOF on the same port.
      await redis.stop();
      await sleep(300);
      redis = await startRedis(flags, { port: redis.port, dir: redis.dir });
      expect(await settled(client, run)).toBe(false);
      await waitSettled(client, run, deadline);
      await w.stop();
      await verify(client, run);
    } finally {
      client.disconnect();
      await redis.stop();
      rmSync(redis.dir, { recursive: true, force: true });
    }
  }, 180_000);
});
