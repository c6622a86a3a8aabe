import { execFile, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { demoRunKeysAt } from '../support/demo-run-keys.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');

interface Run {
  /** The CLI's process id: its keys are `onceflow-demo:<time>:<pid>:...`, its schema `onceflow_demo_<time>_<pid>`. */
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

/** A loopback port nothing listens on (bound, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

type Row = { id: string } & Record<string, unknown>;
const rowOf = (result: { rows: Row[] }, id: string): Row => result.rows.find((r) => r.id === id) as Row;
const EXACT = { lostCount: 0, doubledCount: 0, misbookedCount: 0, roomsOff: 0 };

describe('onceflow demo (built CLI)', () => {
  beforeAll(() => {
    // Builds only when dist/ is missing or older than src/, exactly as `npm start` does.
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });

  it('--json prints one JSON object; the C=4 row is exact and the exit code is 0', async () => {
    const run = await onceflow(['demo', '--settlements', '20000', '--json', '--seed', '7']);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.config).toMatchObject({ settlements: 20_000, seed: 7, overlap: 1, ttl: 60 });
    expect(result.store).toBe('memory');
    expect(result.requiredCapacity).toBeLessThanOrEqual(4);
    expect(rowOf(result, 'onceflow-c4')).toMatchObject({
      strategy: 'onceflow C=4',
      ...EXACT,
      moneyDoubled: 0,
    });
    expect(result.rows.map((r: Row) => r.id)).toEqual([
      'onceflow-c4',
      'onceflow-c3',
      'onceflow-c3-no-order',
      'unique-index',
      'set-nx-ex-60',
      'set-nx-ex-covering',
      'sequence-guard',
      'per-type-flags',
      'no-dedup',
    ]);
    // The defences: a unique index is exact and holds every key; a short TTL doubles late replays.
    expect(rowOf(result, 'unique-index')).toMatchObject({ ...EXACT, heldKeys: 20_000 });
    expect(rowOf(result, 'set-nx-ex-60').doubledCount).toBeGreaterThan(0);
    expect(rowOf(result, 'set-nx-ex-covering')).toMatchObject({
      ...EXACT,
      strategy: `SET NX EX ${result.coveringTtl} (covering)`,
    });
    expect(rowOf(result, 'onceflow-c4').heldBytes).toBeLessThan(
      rowOf(result, 'unique-index').heldBytes as number,
    );
  });

  it('is reproducible: the same seed gives the same rows (timings aside)', async () => {
    const args = ['demo', '--settlements', '4000', '--json', '--seed', '11', '--players', '50'];
    const strip = (out: string) =>
      JSON.parse(out).rows.map(({ ms: _ms, perSecond: _ps, ...rest }: Record<string, unknown>) => rest);
    const [a, b] = await Promise.all([onceflow(args), onceflow(args)]);
    expect(strip(a.stdout)).toEqual(strip(b.stdout));
  });

  it('prints a table of at most 100 columns, the words, why not a unique index; no progress bar when piped', async () => {
    const run = await onceflow(['demo', '--settlements', '4000', '--players', '50']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^strategy\s+blocked\s+stale\s+lost\s+doubled\s+misbooked\s+rooms off\s+memory$/m,
    );
    for (const line of run.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(100);
    expect(run.stdout).toMatch(/^horizon {2,}the newest order the window has forgotten/m);
    expect(run.stdout).toContain('Why not a unique index?');
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
    [['--ttl', '0'], '--ttl', '0'],
    [['--store', 'mysql://h/db'], '--store', 'mysql://h/db'],
    [['--bogus'], '--bogus', 'onceflow demo --help'],
    [['--seeed', '3'], '--seeed', 'did you mean --seed?'],
    [['--redis', 'redis://127.0.0.1:6379'], '--redis', 'use --store redis://host:port'],
    [['--workers', '4'], '--workers', 'examples/settlement-workers.mjs'],
    [['--seed'], '--seed', '--seed'],
  ])('exits 2 on bad options %j, naming the option and what to do', async (args, option, said) => {
    const run = await onceflow(['demo', ...args]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(option);
    expect(run.stderr).toContain(said);
  });

  it('exits 2 on an unknown or missing command; --help exits 0', async () => {
    expect((await onceflow(['dmeo'])).code).toBe(2);
    expect((await onceflow([])).code).toBe(2);
    const help = await onceflow(['demo', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--store URL');
    expect((await onceflow(['--help'])).stdout).toContain('demo');
  });

  it('--store redis://: the onceflow rows decide as on the memory store, exact, and leave no keys', async () => {
    const url = inject('redisUrl');
    const args = ['demo', '--settlements', '20000', '--json', '--seed', '3'];
    const [redis, memory] = await Promise.all([onceflow([...args, '--store', url]), onceflow(args)]);
    expect(redis.stderr).toBe('');
    expect(redis.code).toBe(0);
    const onRedis = JSON.parse(redis.stdout);
    const inMemory = JSON.parse(memory.stdout);
    expect(onRedis.store).toBe('Redis');
    expect(rowOf(onRedis, 'onceflow-c4')).toMatchObject(EXACT);
    for (const id of ['onceflow-c4', 'onceflow-c3', 'onceflow-c3-no-order']) {
      const { ms: _a, perSecond: _b, ...a } = rowOf(onRedis, id);
      const { ms: _c, perSecond: _d, ...b } = rowOf(inMemory, id);
      expect(a).toEqual(b);
    }
    expect(await demoRunKeysAt(url, redis.pid)).toEqual([]);
  });

  it('--store postgres://: exact, in a schema of its own that is dropped at the end', async () => {
    const url = inject('postgresUrl');
    const run = await onceflow([
      'demo',
      '--settlements',
      '4000',
      '--players',
      '50',
      '--json',
      '--store',
      url,
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.store).toBe('PostgreSQL');
    expect(rowOf(result, 'onceflow-c4')).toMatchObject(EXACT);
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const { rows } = await pool.query('SELECT nspname FROM pg_namespace WHERE nspname LIKE $1', [
        `onceflow\\_demo\\_%\\_${run.pid}`,
      ]);
      expect(rows).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it('--store redis:// to a server that is not there: exit 1 with one line naming the URL, no hang', async () => {
    const url = `redis://127.0.0.1:${await closedPort()}`;
    const run = await onceflow(['demo', '--settlements', '2000', '--store', url]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      `onceflow: cannot connect to Redis at ${url}: connect ECONNREFUSED ${url.slice(8)}`,
    );
    expect(run.stdout).toBe('');
  });

  it('--store with a database the server does not have: exit 1 naming it, nothing written to database 0', async () => {
    const url = `${inject('redisUrl')}/99999`;
    const run = await onceflow(['demo', '--settlements', '2000', '--store', url]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(`onceflow: cannot use Redis at ${url}: ERR DB index is out of range`);
    expect(await demoRunKeysAt(inject('redisUrl'), run.pid)).toEqual([]);
  });

  it('URLs ioredis would throw on or misread are refused as options, before anything runs', async () => {
    for (const url of [
      'localhost',
      'redis://127.0.0.1:notaport',
      'redis://127.0.0.1:99999',
      'redis://[::1',
      'redis://%zz@127.0.0.1:6379',
      'redis://127.0.0.1:6379/abc',
      'redis://127.0.0.1:0',
      'http://127.0.0.1:6379',
    ]) {
      const bad = await onceflow(['demo', '--store', url, '--settlements', '2000']);
      expect([url, bad.code]).toEqual([url, 2]);
      expect(bad.stderr).toContain('Expected `--store` to be memory, a Redis URL');
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
});
