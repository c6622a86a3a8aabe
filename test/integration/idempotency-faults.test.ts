import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createIdempotency } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { adminClient, killClients, startDurableRedis } from '../support/durable-redis.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const worker = fileURLToPath(new URL('./fixtures/idempotency-worker.mjs', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));

type Result = [key: string, outcome: string, detail: string | number | null];
interface WorkerError {
  code: string | null;
  retriable: boolean | null;
  outcome: string | null;
  message: string;
}
interface Report {
  results: Result[];
  errors: WorkerError[];
}

interface WorkerConfig {
  url: string;
  prefix: string;
  name: string;
  keys: string[];
  repeats?: number;
  lanes?: number;
  lease: string;
  wait?: boolean | string;
  mode?: 'run' | 'hold';
  paceMs?: number;
  seed?: number;
}

/** A forked worker: its process, and its report (or, in 'hold' mode, the moment it holds every key). */
function startWorker(config: WorkerConfig): {
  child: ChildProcess;
  report: Promise<Report>;
  holding: Promise<void>;
} {
  const child = fork(worker, [JSON.stringify(config)], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  let holding!: () => void;
  const held = new Promise<void>((r) => {
    holding = r;
  });
  const report = new Promise<Report>((resolve, reject) => {
    child.on('message', (m: Report | { holding: number }) => {
      if ('holding' in m) holding();
      else resolve(m);
    });
    child.on('exit', (code, signal) =>
      reject(new Error(`worker exited (${code ?? signal}) without a report`)),
    );
  });
  report.catch(() => {}); // a killed worker's report is never awaited
  return { child, report, holding: held };
}

const keysOf = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runCounts(client: Redis, prefix: string, keys: string[]): Promise<Map<string, number>> {
  const counts = (await client.mget(keys.map((k) => `${prefix}runs:${k}`))) as (string | null)[];
  return new Map(keys.map((k, i) => [k, Number(counts[i] ?? 0)]));
}

/** Every caller of each key got `executed` or `replayed` with one value; one of them `executed`, at most. */
function byKey(reports: Report[]): Map<string, { executed: number; values: Set<string>; other: string[] }> {
  const keys = new Map<string, { executed: number; values: Set<string>; other: string[] }>();
  for (const { results } of reports) {
    for (const [key, outcome, detail] of results) {
      let k = keys.get(key);
      if (k === undefined) keys.set(key, (k = { executed: 0, values: new Set(), other: [] }));
      if (outcome === 'executed') k.executed++;
      if (outcome === 'executed' || outcome === 'replayed') k.values.add(String(detail));
      else k.other.push(`${outcome}:${detail}`);
    }
  }
  return keys;
}

const killWorkerConnections = (admin: Redis) => killClients(admin, 'onceflow-idem-worker');

describe('idempotent runs across OS processes, with faults (real servers)', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('4 processes, the same 1,000 keys, 3 calls each, concurrently: each key ran once, every caller got its value', async () => {
    const client = new Redis(REDIS_URL);
    const prefix = runPrefix('idem-workers');
    cleanups.push(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });
    const keys = keysOf(1000, 'k');
    const workers = Array.from({ length: 4 }, (_, i) =>
      startWorker({
        url: REDIS_URL,
        prefix,
        name: 'w',
        keys,
        repeats: 3,
        lanes: 64,
        lease: '10s',
        seed: 100 + i,
      }),
    );
    const reports = await Promise.all(workers.map((w) => w.report));
    expect(reports.flatMap((r) => r.errors)).toEqual([]);
    expect(reports.map((r) => r.results.length)).toEqual([3000, 3000, 3000, 3000]);
    const runs = await runCounts(client, prefix, keys);
    const seen = byKey(reports);
    expect(seen.size).toBe(1000);
    for (const key of keys) {
      const k = seen.get(key);
      expect({
        key,
        runs: runs.get(key),
        executed: k?.executed,
        values: k?.values.size,
        other: k?.other,
      }).toEqual({
        key,
        runs: 1,
        executed: 1,
        values: 1,
        other: [],
      });
    }
  }, 120_000);

  it('kill -9 of a process holding leases: nobody runs its keys until the lease is out, then one process runs each once', async () => {
    const client = new Redis(REDIS_URL);
    const prefix = runPrefix('idem-kill');
    cleanups.push(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });
    const keys = keysOf(200, 'h');
    // 3 s: the holder renews every second meanwhile (lease/3); well above the time it takes to
    // start the other process and for it to ask once (~0.3-1 s on a loaded 2-core machine).
    const lease = '3s';
    const holder = startWorker({
      url: REDIS_URL,
      prefix,
      name: 'w',
      keys,
      lanes: keys.length,
      lease,
      mode: 'hold',
    });
    await holder.holding;
    const exited = new Promise((r) => holder.child.once('exit', r));
    holder.child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    expect(await runCounts(client, prefix, keys)).toEqual(new Map(keys.map((k) => [k, 1])));

    // At once: every key is still held by the dead process's lease.
    const early = await startWorker({ url: REDIS_URL, prefix, name: 'w', keys, lease, wait: false }).report;
    expect(early.errors).toEqual([]);
    expect(new Set(early.results.map(([, outcome]) => outcome))).toEqual(new Set(['in-progress']));
    expect(Date.now() - killedAt).toBeLessThan(3000);
    // Two processes waiting it out: after the lease, each key runs once, in one of them.
    const late = await Promise.all(
      [1, 2].map(
        (seed) => startWorker({ url: REDIS_URL, prefix, name: 'w', keys, lease, wait: '20s', seed }).report,
      ),
    );
    expect(late.flatMap((r) => r.errors)).toEqual([]);
    const seen = byKey(late);
    const runs = await runCounts(client, prefix, keys);
    for (const key of keys) {
      const k = seen.get(key);
      // 2 runs: the dead holder's (it had counted before it was killed), and one after the lease.
      expect({
        key,
        runs: runs.get(key),
        executed: k?.executed,
        values: k?.values.size,
        other: k?.other,
      }).toEqual({
        key,
        runs: 2,
        executed: 1,
        values: 1,
        other: [],
      });
    }
  }, 120_000);

  it('CLIENT KILL and a restart of Redis (AOF) mid-run: no key completed twice, callers got typed retriable errors', async () => {
    // Every write fsynced before its reply (see durable-redis.ts): a completion Redis answered
    // survives the restart, so a key run again would be a double completion.
    const server = await startDurableRedis();
    const { port, url } = server;
    cleanups.push(() => server.remove());
    const prefix = runPrefix('idem-faults');
    const keys = keysOf(300, 'f');
    const workers = Array.from({ length: 3 }, (_, i) =>
      startWorker({
        url,
        prefix,
        name: 'w',
        keys,
        repeats: 3,
        lanes: 16,
        lease: '1s',
        wait: '20s',
        // Slow enough (300 keys x 3 / 16 lanes x 10 ms: ~0.6 s per worker at the least) that the
        // restart at ~0.3 s lands while every worker still has calls in flight.
        paceMs: 10,
        seed: 7 + i,
      }),
    );
    let done = false;
    const all = Promise.all(workers.map((w) => w.report)).finally(() => {
      done = true;
    });
    let kills = 0;
    let restarts = 0;
    let midRun = false;
    const chaos = (async () => {
      const admin = adminClient(port);
      try {
        for (let tick = 0; !done; tick++) {
          await sleep(150);
          if (tick === 2) {
            midRun = !done;
            // Down for a second: lanes waking from their pace (10 ms) or a wait's backoff call in
            // that time, and fail (one reconnection per request), whatever fn was doing at the kill.
            await server.restart(1000);
            restarts++;
          } else if (!done) {
            kills += await killWorkerConnections(admin);
          }
        }
      } finally {
        admin.disconnect();
      }
    })();
    const [reports] = await Promise.all([all, chaos]);
    expect(restarts).toBe(1);
    expect(midRun).toBe(true);
    expect(kills).toBeGreaterThan(0);

    const errors = reports.flatMap((r) => r.errors);
    // The faults reached callers, as typed errors that say to try again: ERR_STORE, retriable (the
    // restart), or ERR_LEASE_LOST (a complete sent again after its reply was lost finds the record
    // completed, no longer its live lease: the caller cannot tell; a call again replays it).
    expect(errors.filter((e) => e.code === 'ERR_STORE').length).toBeGreaterThan(0);
    for (const e of errors) {
      const typed = e.code === 'ERR_LEASE_LOST' || (e.code === 'ERR_STORE' && e.retriable === true);
      expect(typed, JSON.stringify(e)).toBe(true);
    }

    // Each key's answers carry one value, which is the one stored: at most one `executed`, and a
    // late caller (here) is replayed that value. A second completion would carry a value of its own.
    const client = new Redis(url);
    cleanups.push(async () => client.disconnect());
    const idem = createIdempotency({
      store: createRedisStore({ client, prefix }),
      name: 'w',
      lease: '1s',
      ttl: '1h',
    });
    const seen = byKey(reports);
    const runs = await runCounts(client, prefix, keys);
    for (const key of keys) {
      const k = seen.get(key);
      const stored = await idem.run({ key, payload: { key } }, () => {
        throw new Error(`${key} ran again`);
      });
      expect(stored.outcome).toBe('replayed');
      const value = stored.outcome === 'replayed' ? (stored.value as { id: string }).id : undefined;
      expect({
        key,
        executed: (k?.executed ?? 0) <= 1,
        values: [...(k?.values ?? [])],
        other: k?.other,
      }).toEqual({
        key,
        executed: true,
        values: [value],
        other: [],
      });
      expect(runs.get(key)).toBeGreaterThanOrEqual(1);
    }
  }, 180_000);
});
