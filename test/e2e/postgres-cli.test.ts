// `onceflow migrate --postgres URL` and `onceflow demo --store postgres://...`, run as users
// run them: the built CLI against the run's PostgreSQL, each in a schema of its own.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist', 'cli', 'main.js');
const PG_URL = inject('postgresUrl');

function onceflow(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [cli, ...args],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err !== null && typeof err.code !== 'number') reject(err);
        else resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr });
      },
    );
  });
}

describe('onceflow on PostgreSQL from the command line', () => {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const schema = `t_cli_${process.pid}_${Date.now().toString(36)}`;
  const schemas = async (like: string) =>
    (
      await pool.query('SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE $1', [
        like,
      ])
    ).rows.map((r) => r.schema_name as string);
  beforeAll(() => {
    execFileSync(process.execPath, [join(root, 'scripts', 'ensure-built.mjs')], {
      cwd: root,
      stdio: 'inherit',
    });
  });
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('migrate creates the schema, then finds it current; exit 0 both times', async () => {
    const first = await onceflow(['migrate', '--postgres', PG_URL, '--schema', schema]);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toMatch(new RegExp(`^schema "${schema}" at version \\d+: applied 1 \\(ledger\\)`));
    const again = await onceflow(['migrate', '--postgres', PG_URL, '--schema', schema]);
    expect(again.stdout).toMatch(/already current\n$/);
    expect(await schemas(schema)).toEqual([schema]);
  });

  it('migrate: a wrong option is exit 2; an unreachable server is exit 1 and never prints the password', async () => {
    expect((await onceflow(['migrate'])).code).toBe(2);
    expect((await onceflow(['migrate', '--postgres', PG_URL, '--schema', 'Robert"); DROP'])).code).toBe(2);
    const down = await onceflow(['migrate', '--postgres', 'postgres://app:pw-Zq81x@127.0.0.1:1/test']);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('postgres://app:***@127.0.0.1:1/test');
    expect(down.stderr).not.toContain('pw-Zq81x');
  });

  it('migrate: a --postgres value that is no PostgreSQL URL is exit 2, named, before any connection', async () => {
    for (const bad of ['not a url', 'redis://127.0.0.1:6379', '127.0.0.1:5432', 'postgres://[::1']) {
      const run = await onceflow(['migrate', '--postgres', bad]);
      expect(run.code, bad).toBe(2);
      expect(run.stderr, bad).toContain('Expected `--postgres` to be a PostgreSQL URL');
      expect(run.stderr, bad).not.toMatch(/ENOTFOUND|getaddrinfo/);
    }
    const secret = await onceflow(['migrate', '--postgres', 'mysql://app:pw-Zq81x@db/app']);
    expect(secret.code).toBe(2);
    expect(secret.stderr).toContain('mysql://app:***@db/app');
    expect(secret.stderr).not.toContain('pw-Zq81x');
  });

  // The run's server through its unix socket, when it is the machine's own (the shared
  // 127.0.0.1 one); a server the global setup started listens on TCP only.
  const pgUrl = new URL(PG_URL);
  const socketDir = '/var/run/postgresql';
  const onSocket =
    ['127.0.0.1', 'localhost'].includes(pgUrl.hostname) &&
    existsSync(`${socketDir}/.s.PGSQL.${pgUrl.port || 5432}`);
  it.runIf(onSocket)(
    'migrate: the forms of a unix socket URL pg reads connect, and socket: too',
    async () => {
      const port = pgUrl.port || '5432';
      const user = decodeURIComponent(pgUrl.username) || 'postgres';
      const db = pgUrl.pathname.slice(1);
      for (const url of [
        `postgresql://${user}@/${db}?host=${socketDir}&port=${port}`,
        `socket:${socketDir}?db=${db}&user=${user}&port=${port}`,
      ]) {
        const run = await onceflow(['migrate', '--postgres', url, '--schema', schema]);
        expect(run.stderr, url).toBe('');
        expect(run.code, url).toBe(0);
      }
    },
  );

  it('migrate: a unix socket nobody listens on is named by its path; keyword=value strings are refused', async () => {
    const run = await onceflow([
      'migrate',
      '--postgres',
      'postgresql://postgres@/test?host=/nonexistent-pg-dir',
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('nothing listens at /nonexistent-pg-dir/.s.PGSQL.5432');
    const kv = await onceflow(['migrate', '--postgres', 'host=127.0.0.1 dbname=test password=pw-Zq81x']);
    expect(kv.code).toBe(2);
    expect(kv.stderr).toContain('pg reads no `keyword=value` connection strings');
    expect(kv.stderr).not.toContain('pw-Zq81x');
  });

  it('migrate: a ?password= is redacted and the message after the URL kept whole', async () => {
    const run = await onceflow([
      'migrate',
      '--postgres',
      'postgres://app@127.0.0.1:1/test?password=pw-Zq81x',
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'migrate failed on postgres://app@127.0.0.1:1/test?password=***: nothing listens at 127.0.0.1:1',
    );
    expect(run.stderr).not.toContain('pw-Zq81x');
  });

  it('migrate: a URL that points at another service says a PostgreSQL server was expected', async () => {
    // The run's Redis: it reads the PostgreSQL startup message as a bad command and never
    // answers as PostgreSQL would.
    const redis = new URL(inject('redisUrl'));
    const run = await onceflow([
      'migrate',
      '--postgres',
      `postgres://postgres@${redis.hostname}:${redis.port}/test`,
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`did not answer as a PostgreSQL server`);
    // And a server that takes the connection and drops it at once (the `write EPIPE` kind).
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      const dropped = await onceflow(['migrate', '--postgres', `postgres://postgres@127.0.0.1:${port}/test`]);
      expect(dropped.code).toBe(1);
      expect(dropped.stderr).toContain(
        `the server at 127.0.0.1:${port} did not answer as a PostgreSQL server`,
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
  }, 60_000);

  it('demo --store postgres://: the onceflow rows are exact, decide the exit code, and leave no schema behind', async () => {
    const before = await schemas('onceflow_demo_%');
    const run = await onceflow(['demo', '--settlements', '6000', '--seed', '3', '--store', PG_URL, '--json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    type Row = { id: string; lostCount: number; doubledCount: number };
    const result = JSON.parse(run.stdout) as { store: string; rows: Row[] };
    expect(result.store).toBe('PostgreSQL');
    expect(result.rows.find((r) => r.id === 'onceflow-c4')).toMatchObject({
      lostCount: 0,
      doubledCount: 0,
      misbookedCount: 0,
      roomsOff: 0,
    });
    // The naive rows are wrong on the same log (the demo would prove nothing otherwise).
    expect(result.rows.some((r) => r.lostCount + r.doubledCount > 0)).toBe(true);
    expect(await schemas('onceflow_demo_%')).toEqual(before);
  });
});
