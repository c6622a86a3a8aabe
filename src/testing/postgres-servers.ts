import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './redis-servers.js';

const exec = promisify(execFile);

// PostgreSQL servers of a test's own, for fault tests that kill or restart them (never the
// machine's shared server). node: built-ins and the server's own binaries only (initdb, pg_ctl,
// psql): `onceflow/testing` needs no client library for these.

/** A PostgreSQL server this test run initdb'd and started (and must stop). */
export interface StartedPostgres {
  port: number;
  /** Its data directory (also its socket directory and where its log is). */
  dir: string;
  /** `postgres://postgres@127.0.0.1:PORT/postgres`: trust auth on loopback. */
  url: string;
  /**
   * A crash: an immediate-mode shutdown (`pg_ctl stop -m immediate`: every backend quits at once,
   * no checkpoint, so the next start runs crash recovery from the WAL), SIGKILL of the postmaster
   * if that fails; waits until the server no longer answers.
   */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (after `kill` or `stop`); resolves once it answers. */
  restart(): Promise<void>;
  /** Stops it (`pg_ctl stop -m immediate`) and removes its directory. */
  stop(): Promise<void>;
}

/** The directory of the server binaries: `ONCEFLOW_PG_BIN`, else the newest /usr/lib/postgresql/N/bin. */
function binDir(): string {
  const given = process.env['ONCEFLOW_PG_BIN'];
  if (given) return given;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error('no PostgreSQL server binaries: set ONCEFLOW_PG_BIN to their directory');
  return join(root, versions[0] as string, 'bin');
}

// initdb and the server refuse to run as root: as root, they run as the `postgres` user.
async function asServerUser(bin: string, args: string[]): Promise<string> {
  const root = process.getuid?.() === 0;
  const { stdout } = root
    ? await exec('runuser', ['-u', 'postgres', '--', bin, ...args])
    : await exec(bin, args);
  return stdout;
}

/**
 * True when `SELECT 1` succeeds at `url` within `timeoutMs` (through `psql`, no client library).
 *
 * @example
 * ```ts
 * await postgresAnswers(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'); // true
 * await postgresAnswers('postgres://127.0.0.1:1/test', 500); // false
 * ```
 */
export async function postgresAnswers(url: string, timeoutMs = 2000): Promise<boolean> {
  try {
    const { stdout } = await exec('psql', [url, '-Atqc', 'SELECT 1'], {
      timeout: timeoutMs,
      env: { ...process.env, PGCONNECT_TIMEOUT: String(Math.ceil(timeoutMs / 1000)) },
    });
    return stdout.trim() === '1';
  } catch {
    return false;
  }
}

/**
 * Initdb's a fresh cluster in a new directory and starts it on a free port (or `options.port`),
 * listening on 127.0.0.1 only, trust auth, fsync off (a test's data need not survive a power
 * cut, only a process crash, which fsync does not affect). Resolves once it answers. `kill()`
 * crashes it, `restart()` brings it back with its data: crash recovery as a real server does it.
 *
 * @example
 * ```ts
 * const server = await startPostgres();
 * // ... point a pool at server.url, then crash the server mid-run:
 * await server.kill();
 * await postgresAnswers(server.url); // false
 * await server.restart(); // crash recovery replays the WAL
 * await postgresAnswers(server.url); // true
 * await server.stop();
 * ```
 */
export async function startPostgres(
  options: { port?: number; settings?: Record<string, string> } = {},
): Promise<StartedPostgres> {
  const bin = binDir();
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'onceflow-pg-'));
  try {
    return await initAndStart(bin, port, dir, options.settings);
  } catch (err) {
    // Not started (or not answering): nothing of it may stay behind in the temporary directory.
    await asServerUser(join(bin, 'pg_ctl'), ['-D', dir, '-m', 'immediate', '-w', '-t', '10', 'stop']).catch(
      () => {},
    );
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

async function initAndStart(
  bin: string,
  port: number,
  dir: string,
  given: Record<string, string> | undefined,
): Promise<StartedPostgres> {
  if (process.getuid?.() === 0) {
    const ids = (await exec('id', ['-u', 'postgres'])).stdout.trim();
    const gid = (await exec('id', ['-g', 'postgres'])).stdout.trim();
    chownSync(dir, Number(ids), Number(gid));
  }
  chmodSync(dir, 0o700);
  await asServerUser(join(bin, 'initdb'), [
    '-D',
    dir,
    '-U',
    'postgres',
    '--auth=trust',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  const settings = {
    listen_addresses: '127.0.0.1',
    fsync: 'off',
    full_page_writes: 'off',
    max_connections: '100',
    ...given,
  };
  const serverArgs = [
    `-p ${port} -k ${dir}`,
    ...Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`),
  ].join(' ');
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const start = async () => {
    await asServerUser(join(bin, 'pg_ctl'), [
      '-D',
      dir,
      '-o',
      serverArgs,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      'start',
    ]);
    for (let i = 0; i < 100 && !(await postgresAnswers(url)); i++)
      await new Promise((r) => setTimeout(r, 100));
  };
  const pid = () => {
    const file = join(dir, 'postmaster.pid');
    return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
  };
  await start();
  const server: StartedPostgres = {
    port,
    dir,
    url,
    async kill() {
      await asServerUser(join(bin, 'pg_ctl'), ['-D', dir, '-m', 'immediate', '-w', '-t', '10', 'stop']).catch(
        () => {},
      );
      const p = pid();
      if (p !== undefined) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // Already gone.
        }
        for (let i = 0; i < 100; i++) {
          try {
            process.kill(p, 0);
          } catch {
            break;
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      // Its backends outlive a killed postmaster for a moment; they exit once they notice.
      for (let i = 0; i < 100 && (await postgresAnswers(url, 300)); i++)
        await new Promise((r) => setTimeout(r, 50));
    },
    async restart() {
      await start();
    },
    async stop() {
      await server.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}
