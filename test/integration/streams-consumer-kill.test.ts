// Consumer processes killed with SIGKILL at random points and started again, on the real Redis:
// afterwards every event was booked exactly once, nothing is left pending, and the dead-letter
// stream holds exactly the poison events planted. The booking and the XACK are one script, so a
// kill lands before both or after both; a killed consumer's entries are reclaimed by the others.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonSerializer } from '../../src/idempotency/serializer.js';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/redis-store.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const worker = fileURLToPath(new URL('./fixtures/streams-consumer-worker.mjs', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const client = new Redis(REDIS_URL);
const prefix = runPrefix('streams-kill');
afterAll(async () => {
  await cleanupPrefix(client, prefix);
  client.disconnect();
});

// 3 processes on 2 shared cores: 8 000 events take longer than the 12 kills (~3 s), so every kill
// lands mid-run, and the whole run stays within ~10 s.
const WORKERS = 3;
const EVENTS = 8000;
const OWNERS = 40;
const POISON = 8;

describe('stream consumers killed with SIGKILL and restarted (ledger path)', () => {
  it('books every event once, leaves nothing pending, dead-letters exactly the poison events', async () => {
    const stream = `${prefix}events`;
    const keyPrefix = `${prefix}l:`;
    const expected = new Map<string, bigint>();
    const poisonIds = new Set<string>();
    let pipeline = client.pipeline();
    for (let i = 0; i < EVENTS; i++) {
      const owner = `p${i % OWNERS}`;
      const poison = i % Math.floor(EVENTS / POISON) === 7;
      const id = `ev-${i}`;
      if (poison) poisonIds.add(id);
      else expected.set(owner, (expected.get(owner) ?? 0n) + BigInt(i));
      pipeline.xadd(stream, '*', 'e', jsonSerializer.serialize({ owner, amount: i, poison }), 'i', id);
      if (i % 500 === 499) {
        await pipeline.exec();
        pipeline = client.pipeline();
      }
    }
    await pipeline.exec();
    expect(poisonIds.size).toBe(POISON);

    const procs: (ChildProcess | undefined)[] = [];
    const exits: Promise<unknown>[] = [];
    const launch = (slot: number) => {
      const child = spawn(
        process.execPath,
        [
          worker,
          JSON.stringify({ url: REDIS_URL, stream, consumer: `w${slot}`, prefix: keyPrefix, claimIdle: 400 }),
        ],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      procs[slot] = child;
      exits.push(new Promise((resolve) => child.once('exit', resolve)));
    };
    for (let slot = 0; slot < WORKERS; slot++) launch(slot);

    const settled = async () => {
      const flat = ((await client.call('XINFO', 'GROUPS', stream)) as unknown[][])[0] ?? [];
      const lag = flat[flat.indexOf('lag') + 1];
      const summary = (await client.call('XPENDING', stream, 'g')) as [number, ...unknown[]];
      return lag === 0 && summary[0] === 0;
    };
    let kills = 0;
    const deadline = Date.now() + 120_000;
    // Kill one process at a random point every 150-350 ms, restart it at once, 12 times.
    while (kills < 12 && Date.now() < deadline) {
      await sleep(150 + Math.floor(Math.random() * 200));
      const slot = Math.floor(Math.random() * WORKERS);
      const child = procs[slot] as ChildProcess;
      child.kill('SIGKILL');
      await new Promise((resolve) =>
        child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve),
      );
      kills++;
      launch(slot);
    }
    // The kills landed while work was in flight: the run was not over when the last one did.
    expect(await settled()).toBe(false);
    while (!(await settled()) && Date.now() < deadline) await sleep(100);
    for (const child of procs) child?.kill('SIGTERM');
    await Promise.all(exits);
    expect(await settled()).toBe(true);

    const ledger = createLedger({ store: createRedisStore({ client, prefix: keyPrefix }), capacity: 64 });
    for (const [owner, coins] of expected) {
      expect(await ledger.balances(owner)).toEqual({ coins });
      const journal = await ledger.journal({ owner });
      expect(journal.length).toBe(
        EVENTS / OWNERS -
          [...poisonIds].filter((id) => Number(id.slice(3)) % OWNERS === Number(owner.slice(1))).length,
      );
      expect(new Set(journal.map((j) => j.signature)).size).toBe(journal.length);
    }
    const dead = (await client.call('XRANGE', `${stream}:dead`, '-', '+')) as [string, string[]][];
    const deadIds = dead.map(([, f]) => f[f.indexOf('id') + 1]);
    expect(new Set(deadIds)).toEqual(poisonIds);
    expect(deadIds).toHaveLength(POISON);
    for (const [, f] of dead) expect(f.slice(0, 2)).toEqual(['reason', 'max-deliveries']);
  }, 180_000);
});
