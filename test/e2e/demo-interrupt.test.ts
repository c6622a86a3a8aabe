// `onceflow demo --store URL` interrupted (Ctrl-C's SIGINT, a supervisor's SIGTERM) cleans up as a
// finished run does: the run's keys or schema are removed, and it exits 130 or 143. Runs the built CLI (built by the global setup), as
// demo.test.ts does, and interrupts it once the run has written state.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { demoRunKeys } from '../support/demo-run-keys.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const redis = new Redis(inject('redisUrl'));
const pool = new pg.Pool({ connectionString: inject('postgresUrl'), max: 1 });
afterAll(async () => {
  redis.disconnect();
  await pool.end();
});

/** The Redis keys of the demo run of CLI process `pid` (its prefix: `onceflow-demo:<time>:<pid>:`). */
function keysOfRun(pid: number): Promise<string[]> {
  return demoRunKeys(redis, pid);
}

/** The PostgreSQL schemas of the demo run of CLI process `pid` (`onceflow_demo_<time>_<pid>`). */
async function schemasOfRun(pid: number): Promise<string[]> {
  const { rows } = await pool.query<{ nspname: string }>(
    'SELECT nspname FROM pg_namespace WHERE nspname LIKE $1',
    [`onceflow\\_demo\\_%\\_${pid}`],
  );
  return rows.map((r) => r.nspname);
}

/** The SQL to drop what a run left (only if a test failed): its own schemas, by name. */
async function dropSchemas(names: string[]): Promise<void> {
  for (const name of names) await pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
}

/** Polls `check` until it holds (generous: the CI machine may be busy), failing with `what`. */
async function until(what: string, check: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await sleep(50);
  }
}

/**
 * Starts a demo run long enough to be interrupted, waits until it wrote state (`written`), sends
 * `signal`, and returns how it ended.
 */
async function interrupted(
  args: string[],
  written: (pid: number) => Promise<boolean>,
  signal: NodeJS.Signals,
) {
  const child = spawn(process.execPath, [cli, 'demo', '--settlements', '200000', '--json', ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, sig) => resolve({ code, signal: sig })),
  );
  const pid = child.pid as number;
  await until('the run wrote state', () => written(pid));
  child.kill(signal);
  const end = await exited;
  return { pid, end, stderr, stdout };
}

describe('onceflow demo interrupted: state removed, exit 128 + signal', () => {
  it('--store redis://, SIGINT: no key of the run is left, exit 130', async () => {
    const url = inject('redisUrl');
    const run = await interrupted(
      ['--store', url],
      async (pid) => (await keysOfRun(pid)).length > 0,
      'SIGINT',
    );
    try {
      expect(run.end).toEqual({ code: 130, signal: null });
      expect(run.stdout).toBe(''); // no report of a run that did not finish
      expect(run.stderr).toContain("SIGINT: removing the run's state");
      expect(await keysOfRun(run.pid)).toEqual([]);
    } finally {
      const left = await keysOfRun(run.pid);
      if (left.length > 0) await redis.unlink(...left);
    }
  }, 120_000);

  it('--store postgres://, SIGTERM: the run schema is dropped, exit 143', async () => {
    const url = inject('postgresUrl');
    const run = await interrupted(
      ['--store', url],
      async (pid) => {
        const [schema] = await schemasOfRun(pid);
        if (schema === undefined) return false;
        // Written: an owner row booked by the run (the migration at start makes the tables, empty;
        // the journal is off, so the owner rows are what an apply writes). Until the migration
        // commits the table is not there (42P01: undefined_table).
        try {
          const { rows } = await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM "${schema}".ledger_owner`,
          );
          return Number(rows[0]?.n) > 0;
        } catch (err) {
          if ((err as { code?: string }).code === '42P01') return false;
          throw err;
        }
      },
      'SIGTERM',
    );
    try {
      expect(run.end).toEqual({ code: 143, signal: null });
      expect(await schemasOfRun(run.pid)).toEqual([]);
    } finally {
      await dropSchemas(await schemasOfRun(run.pid));
    }
  }, 120_000);
});
