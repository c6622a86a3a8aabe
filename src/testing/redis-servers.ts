import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

// Redis servers of a test's own, for fault tests that kill or restart them (never a shared
// server). node: built-ins only: `onceflow/testing` needs no client library for these.

/** A redis-server this test run started (and must stop). */
export interface StartedRedis {
  port: number;
  /** Its working directory (AOF, RDB, log). */
  dir: string;
  process: ChildProcess;
  /**
   * Kills it (SIGKILL: a crash, not a shutdown) and waits for it to exit. Its directory stays, to
   * start it again there (`startRedis(extra, { port, dir })`); `remove()` when done with it.
   */
  stop(): Promise<void>;
  /** Kills it as `stop()` does and removes its directory: the last call on a server of a test's own. */
  remove(): Promise<void>;
}

// The directories startRedis made in this process, each with the server last started there: a
// test that fails before its own clean-up (or forgets it) must not leave them in the temporary
// directory. Removed, their servers killed, when the process exits; `remove()` does it at once.
const made = new Map<string, ChildProcess>();
let sweepOnExit = false;
function sweep(): void {
  for (const [dir, child] of made) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  made.clear();
}

/**
 * True when something answers PING on host:port within `timeoutMs`, spoken in RESP over
 * `node:net` (no client library).
 *
 * @example
 * ```ts
 * const redis = await startRedis();
 * await pingable(redis.port); // true
 * await redis.stop();
 * await pingable(redis.port); // false
 * await redis.remove(); // its directory too
 * ```
 */
export async function pingable(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    // Closed by the other end before a reply (a proxy refusing connections): no timeout fires then.
    socket.once('close', () => done(false));
    socket.connect(port, host, () => socket.write('PING\r\n'));
    socket.once('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port p such that p and p + 10000 (the cluster bus) are both free on 127.0.0.1.
 *
 * @example
 * ```ts
 * const port = await freePort();
 * const redis = await startRedis([], { port });
 * redis.port === port; // true
 * await redis.remove();
 * ```
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if ((await portFree(port)) && (await portFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair found');
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Starts a redis-server (it must be on the PATH) in the foreground, a child of this process so a
 * crash of the test run takes it down too, on a free port (or `options.port`) and a fresh
 * directory, with no snapshots. `extra` adds config arguments, e.g. AOF or cluster mode. Resolves
 * once it answers PING. Restart one on its port and directory to test recovery. `remove()` stops it
 * and removes the directory (in a `finally` or `afterAll`, so a failed test leaves nothing behind);
 * a directory made here that is still there when the process exits is removed then, its server
 * killed.
 *
 * @example
 * ```ts
 * const redis = await startRedis(['--appendonly', 'yes']);
 * // ... point a client at redis://127.0.0.1:${redis.port}, then crash the server:
 * await redis.stop();
 * const again = await startRedis(['--appendonly', 'yes'], { port: redis.port, dir: redis.dir });
 * await pingable(again.port); // true
 * await again.remove(); // stopped, and its directory (the one both ran in) removed
 * ```
 */
export async function startRedis(
  extra: string[] = [],
  options: { port?: number; dir?: string } = {},
): Promise<StartedRedis> {
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'onceflow-redis-'));
  const ours = options.dir === undefined || made.has(dir);
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--logfile',
      'redis.log',
      ...extra,
    ],
    { stdio: 'ignore' },
  );
  if (ours) {
    made.set(dir, child);
    if (!sweepOnExit) {
      sweepOnExit = true;
      process.once('exit', sweep);
    }
  }
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
  };
  try {
    await waitFor(() => pingable(port), `redis-server on ${port}`);
  } catch (err) {
    await stop();
    if (options.dir === undefined) {
      made.delete(dir);
      rmSync(dir, { recursive: true, force: true });
    }
    throw err;
  }
  return {
    port,
    dir,
    process: child,
    stop,
    async remove() {
      await stop();
      made.delete(dir);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A 3-master Redis Cluster on free ports, no replicas (redis-server and redis-cli on the PATH);
 * resolves once `cluster_state:ok`. `stop()` kills the nodes and removes their directories.
 *
 * @example
 * ```ts
 * const cluster = await startCluster();
 * cluster.ports.length; // 3
 * // new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port }))) with ioredis
 * await cluster.stop();
 * ```
 */
export async function startCluster(): Promise<{ ports: number[]; stop(): Promise<void> }> {
  const nodes: StartedRedis[] = [];
  const stop = async () => {
    for (const n of nodes) await n.remove();
  };
  try {
    for (let i = 0; i < 3; i++) {
      nodes.push(
        await startRedis([
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--appendonly',
          'no',
        ]),
      );
    }
    await formCluster(nodes.map((n) => n.port));
  } catch (err) {
    await stop();
    throw err;
  }
  return { ports: nodes.map((n) => n.port), stop };
}

async function formCluster(ports: number[]): Promise<void> {
  await exec('redis-cli', [
    '--cluster',
    'create',
    ...ports.map((p) => `127.0.0.1:${p}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  await waitFor(async () => {
    const { stdout } = await exec('redis-cli', ['-p', String(ports[0]), 'cluster', 'info']);
    return stdout.includes('cluster_state:ok');
  }, 'cluster_state:ok');
}
