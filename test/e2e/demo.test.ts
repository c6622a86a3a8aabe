import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { demoRunKeysAt } from '../support/demo-run-keys.js';
import { childrenOf, isAlive } from '../support/processes.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');

interface Run {
  /** The coordinator's process id: its keys are `onceflow-demo:<time>:<pid>:...`. */
  pid: number;
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI and resolves with its exit code and output (a non-zero exit is not an error). */
function onceflow(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      process.execPath,
      [cli, ...args],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err !== null && typeof err.code !== 'number') reject(err);
        else resolve({ pid: child.pid ?? -1, code: err === null ? 0 : (err.code as number), stdout, stderr });
      },
    );
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A loopback port nothing listens on (bound, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

/** A long `demo --redis` run with 2 workers, once both worker processes are running. */
// The temporary directories of the demos these tests kill: a coordinator killed with SIGKILL cannot
// remove the directory its workers write their outcomes to, so each such demo gets a TMPDIR of its
// own, removed when the file is done.
const killedRunTmp: string[] = [];

async function demoWithTwoWorkers(url: string) {
  const tmp = mkdtempSync(join(tmpdir(), 'onceflow-demo-run-'));
  killedRunTmp.push(tmp);
  const child = spawn(
    process.execPath,
    [cli, 'demo', '--settlements', '600000', '--redis', url, '--workers', '2', '--json'],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: tmp } },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const pid = child.pid as number;
  let workers: number[] = [];
  for (let i = 0; i < 200 && workers.length < 2; i++) {
    await sleep(50);
    workers = childrenOf(pid);
  }
  expect(workers).toHaveLength(2);
  return { child, pid, exited, workers };
}

describe('onceflow demo (built CLI)', () => {
  afterAll(() => {
    for (const dir of killedRunTmp.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  beforeAll(() => {
    // Builds only when dist/ is missing or older than src/, exactly as `npm start` does.
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('--json prints one JSON object; the capacity-4 row is exact and the exit code is 0', async () => {
    const run = await onceflow(['demo', '--settlements', '20000', '--json', '--seed', '7']);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.config).toMatchObject({ settlements: 20_000, seed: 7, overlap: 1 });
    expect(result.requiredCapacity).toBeLessThanOrEqual(4);
    const c4 = result.rows.find((r: { id: string }) => r.id === 'onceflow-c4');
    expect(c4).toMatchObject({
      strategy: 'onceflow window (capacity 4)',
      lostCount: 0,
      moneyLost: 0,
      doubledCount: 0,
      moneyDoubled: 0,
      misbookedCount: 0,
      moneyMisbooked: 0,
      roomsOff: 0,
    });
    expect(result.rows).toHaveLength(6);
  });

  it('is reproducible: the same seed gives the same rows (timings aside)', async () => {
    const args = ['demo', '--settlements', '4000', '--json', '--seed', '11', '--players', '50'];
    const strip = (out: string) =>
      JSON.parse(out).rows.map(({ ms: _ms, perSecond: _ps, ...rest }: Record<string, unknown>) => rest);
    const [a, b] = await Promise.all([onceflow(args), onceflow(args)]);
    expect(strip(a.stdout)).toEqual(strip(b.stdout));
  });

  it('prints the table, the reading guide and the capacity rule; no progress bar when stderr is piped', async () => {
    const run = await onceflow(['demo', '--settlements', '4000', '--players', '50']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^strategy\s+applied\s+blocked\s+stale\s+money lost\s+doubled\s+misbooked/m);
    expect(run.stdout).toContain('How to read it');
    expect(run.stdout).toContain('Capacity this log required:');
    expect(run.stdout).toContain('Rule (DESIGN §3.2)');
    expect(run.stderr).toBe('');
  });

  it('--overlap 2 shows capacity 5 needed, stale answers, and still exit code 0', async () => {
    const run = await onceflow(['demo', '--settlements', '60000', '--json', '--overlap', '2']);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.requiredCapacity).toBe(5);
    expect(result.rows[0]).toMatchObject({ id: 'onceflow-c4', doubledCount: 0, lostCount: 0 });
    expect(result.rows[0].stale).toBeGreaterThan(0);
  });

  it.each([
    [['--settlements', 'lots'], '--settlements', 'lots'],
    [['--overlap', '3'], '--overlap', '3'],
    [['--dup-rate', '2'], '--dup-rate', '2'],
    [['--bogus'], '--bogus', '--bogus'],
    [['--seed'], '--seed', '--seed'],
  ])('exits 2 on bad options %j, naming the option and the value', async (args, option, value) => {
    const run = await onceflow(['demo', ...args]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(option);
    expect(run.stderr).toContain(value);
  });

  it('exits 2 on an unknown or missing command; --help exits 0', async () => {
    expect((await onceflow(['dmeo'])).code).toBe(2);
    expect((await onceflow([])).code).toBe(2);
    const help = await onceflow(['demo', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--settlements N');
    expect((await onceflow(['--help'])).stdout).toContain('demo');
  });

  it('--redis with 4 worker processes: the Redis row is exact, decides the exit code, and leaves no keys', async () => {
    const url = inject('redisUrl');
    const run = await onceflow([
      'demo',
      '--settlements',
      '20000',
      '--json',
      '--seed',
      '3',
      '--redis',
      url,
      '--workers',
      '4',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    const redis = result.rows.find((r: { id: string }) => r.id === 'onceflow-redis-c4');
    expect(redis).toMatchObject({
      strategy: 'onceflow on Redis (capacity 4, 4 workers)',
      lostCount: 0,
      doubledCount: 0,
      misbookedCount: 0,
      roomsOff: 0,
      stale: 0,
    });
    // Same log, same decisions as the in-process capacity-4 row.
    const memory = result.rows.find((r: { id: string }) => r.id === 'onceflow-c4');
    expect(redis.applied).toBe(memory.applied);
    expect(redis.blocked).toBe(memory.blocked);
    // The run's keys were under its own prefix and are gone.
    expect(await demoRunKeysAt(url, run.pid)).toEqual([]);
  });

  it('--redis to a server that is not there: exit 1 with one line naming the URL, no hang', async () => {
    const url = `redis://127.0.0.1:${await closedPort()}`;
    const started = Date.now();
    const run = await onceflow(['demo', '--settlements', '2000', '--redis', url, '--workers', '2']);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      `onceflow: cannot connect to Redis at ${url}: connect ECONNREFUSED ${url.slice(8)}`,
    );
    expect(run.stdout).toBe('');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('--redis with a database the server does not have: exit 1 naming it, nothing written to database 0', async () => {
    const url = `${inject('redisUrl')}/99999`;
    const run = await onceflow(['demo', '--settlements', '2000', '--redis', url, '--workers', '2']);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(`onceflow: cannot use Redis at ${url}: ERR DB index is out of range`);
    expect(await demoRunKeysAt(inject('redisUrl'), run.pid)).toEqual([]);
  });

  it('a worker killed mid-run: the others are stopped, the run fails with exit 1 and leaves no keys', async () => {
    const url = inject('redisUrl');
    const { child, pid, exited, workers } = await demoWithTwoWorkers(url);
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    await sleep(300);
    process.kill(workers[1] as number, 'SIGKILL');
    expect(await exited).toBe(1);
    expect(stderr.trim()).toMatch(/^onceflow: demo worker \d was killed \(SIGKILL\)$/);
    for (const worker of workers) expect(isAlive(worker)).toBe(false);
    const client = new Redis(url);
    try {
      const [, keys] = await client.scan('0', 'MATCH', `onceflow-demo:*:${pid}:*`, 'COUNT', 100_000);
      expect(keys).toEqual([]);
    } finally {
      client.disconnect();
    }
  });

  it('--workers needs --redis, and --redis needs a Redis URL', async () => {
    const workers = await onceflow(['demo', '--workers', '4']);
    expect(workers.code).toBe(2);
    expect(workers.stderr).toContain('`--workers`');
    const redis = await onceflow(['demo', '--redis', 'localhost']);
    expect(redis.code).toBe(2);
    expect(redis.stderr).toContain('`--redis`');
    // URLs ioredis would throw on (a stack trace, exit 1) or read as database NaN (refused only
    // after the workers had started writing): refused as options, before anything runs.
    for (const url of [
      'redis://127.0.0.1:notaport',
      'redis://127.0.0.1:99999',
      'redis://[::1',
      'redis://%zz@127.0.0.1:6379',
      'redis://127.0.0.1:6379/abc',
      'redis://127.0.0.1:0',
      'http://127.0.0.1:6379',
    ]) {
      const bad = await onceflow(['demo', '--redis', url, '--settlements', '2000']);
      expect([url, bad.code]).toEqual([url, 2]);
      expect(bad.stderr).toContain('Expected `--redis` to be a Redis URL');
      expect(bad.stderr).not.toContain('    at ');
    }
  });

  it('a negative or malformed number is refused with what the option expects; --version prints it', async () => {
    for (const args of [
      ['--settlements', '-1'],
      ['--seed', '-5'],
      ['--dup-rate', '-0.5'],
      ['--settlements', '1__0'],
      ['--settlements', '10_'],
    ]) {
      const run = await onceflow(['demo', ...args]);
      expect([args, run.code]).toEqual([args, 2]);
      expect(run.stderr).toContain(`Expected \`${args[0]}\` to be`);
    }
    const version = await onceflow(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const unknown = await onceflow(['--versoin']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown option "--versoin"');
  });

  it('a coordinator killed mid-run takes its worker processes with it', async () => {
    const url = inject('redisUrl');
    const { pid, exited, workers } = await demoWithTwoWorkers(url);
    process.kill(pid, 'SIGKILL');
    await exited;
    // A worker notices its coordinator's death between batches of its work; on 2 loaded cores
    // a batch can take seconds, so it gets up to 20 s (a worker left running never exits at all).
    for (let i = 0; i < 400 && workers.some(isAlive); i++) await sleep(50);
    expect(workers.filter(isAlive)).toEqual([]);
    // What the killed run wrote stays (nobody is left to judge it): removed here.
    const client = new Redis(url);
    try {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', `onceflow-demo:*:${pid}:*`, 'COUNT', 10_000);
        if (keys.length > 0) await client.unlink(...keys);
        cursor = next;
      } while (cursor !== '0');
    } finally {
      client.disconnect();
    }
  });
});
