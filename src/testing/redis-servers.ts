import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

const exec = promisify(execFile);

// Redis servers of a test's own, for fault tests that kill or restart them (never a shared
// server). node: built-ins only: `onceflow/testing` needs no client library for these. Every port
// they listen on (a server's, a cluster bus's, a proxy's) is within ONCEFLOW_TEST_PORTS (ports.ts).

export { freePort } from './ports.js';

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

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// A port chosen here may be taken by another process between the check and the server's bind:
// the server then exits at once, and is started again on another port, this many times.
const START_TRIES = 5;

/**
 * Starts a redis-server (it must be on the PATH) in the foreground, a child of this process so a
 * crash of the test run takes it down too, on a free port (or `options.port`) and a fresh
 * directory, with no snapshots. `extra` adds config arguments, e.g. AOF or cluster mode (a
 * cluster node gets its bus on a free port too, `--cluster-port`, unless `extra` sets one).
 * Resolves once it answers PING. Restart one on its port and directory to test recovery.
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
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'onceflow-redis-'));
  const ours = options.dir === undefined || made.has(dir);
  const clusterNode = extra.some((arg, i) => arg === '--cluster-enabled' && extra[i + 1] === 'yes');
  const busGiven = extra.includes('--cluster-port');
  const forget = () => {
    if (options.dir !== undefined) return;
    made.delete(dir);
    rmSync(dir, { recursive: true, force: true });
  };
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await freePort());
    const bus = clusterNode && !busGiven ? ['--cluster-port', String(await freePort())] : [];
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
        ...bus,
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
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    const stop = async () => {
      if (!exited()) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await gone;
      }
    };
    try {
      // Another server answering on the port is not this one: only a live child counts.
      await waitFor(async () => exited() || (await pingable(port)), `redis-server on ${port}`);
    } catch (err) {
      await stop();
      forget();
      throw err;
    }
    if (exited()) {
      if (options.port === undefined && attempt < START_TRIES) continue;
      let log = '';
      try {
        log = readFileSync(join(dir, 'redis.log'), 'utf8').slice(-800);
      } catch {
        // no log written: the message says so
      }
      forget();
      throw new Error(`redis-server on ${port} exited at start; its log ends:\n${log || '(empty)'}`);
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
}

/** A node of a cluster {@link startCluster} started. */
export interface ClusterNode {
  /** The port it listens on. */
  readonly port: number;
  /** The port it announces to the cluster (its proxy's with `proxied`, else its own). */
  readonly announced: number;
  /** With `proxied`: the proxy every connection to `announced` goes through. */
  readonly proxy: TcpProxy | undefined;
  readonly server: StartedRedis;
}

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** Masters (each with a third of the slots, as redis-cli assigns them). Default 3. */
  masters?: number;
  /** Replicas per master. Default 0. Resolves only once each replica's initial sync is done. */
  replicas?: number;
  /**
   * `cluster-node-timeout` in ms: how long a node may not answer before it is failed over.
   * Default Redis's (15 000). Short values (1000) make a failover test quick; on a loaded
   * machine a node that stalls that long is failed over too.
   */
  nodeTimeoutMs?: number;
  /**
   * Puts a {@link TcpProxy} in front of each node and has the node announce the proxy's port
   * (`cluster-announce-port`): whatever finds a node through the cluster (a replica's replication
   * link to its master, a client reading CLUSTER SLOTS) goes through its proxy, while the cluster
   * bus stays direct. A client that should go direct maps each announced port to the node's own
   * with {@link StartedCluster.natMap} (ioredis `Cluster`'s `natMap`). Cutting a master's proxy
   * then partitions its replicas from it and nothing else.
   */
  proxied?: boolean;
  /** Config arguments for every node (e.g. `['--appendonly', 'yes']`). */
  extra?: string[];
}

/** A cluster {@link startCluster} started. */
export interface StartedCluster {
  /** Every node's own port, the masters' first: seed nodes for a client. */
  readonly ports: number[];
  readonly nodes: ClusterNode[];
  /**
   * Announced `127.0.0.1:port` to the node's own address, for ioredis `Cluster`'s `natMap`
   * (empty unless `proxied`).
   */
  readonly natMap: Record<string, { host: string; port: number }>;
  /** Kills every node (and closes the proxies) and removes their directories. */
  stop(): Promise<void>;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  return (await exec('redis-cli', ['-p', String(port), ...args])).stdout;
}

/**
 * A Redis Cluster on free ports (redis-server and redis-cli on the PATH): 3 masters by default,
 * with `replicas` replicas each; resolves once every node reports `cluster_state:ok` and every
 * replica has finished its initial sync (`master_link_status:up`, no sync in progress), so a
 * failover right after finds replicas holding the data. `stop()` kills the nodes and removes their
 * directories.
 *
 * @example
 * ```ts
 * const cluster = await startCluster();
 * cluster.ports.length; // 3
 * // new Cluster(cluster.ports.map((port) => ({ host: '127.0.0.1', port })), { natMap: cluster.natMap }) with ioredis
 * await cluster.stop();
 * ```
 */
export async function startCluster(options: ClusterOptions = {}): Promise<StartedCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicas ?? 0;
  if (!Number.isSafeInteger(masters) || masters < 3)
    throw new Error(`startCluster: masters must be an integer >= 3 (redis-cli's minimum), got ${masters}`);
  if (!Number.isSafeInteger(replicas) || replicas < 0)
    throw new Error(`startCluster: replicas must be an integer >= 0, got ${replicas}`);
  const common = [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--appendonly',
    'no',
    ...(options.nodeTimeoutMs === undefined ? [] : ['--cluster-node-timeout', String(options.nodeTimeoutMs)]),
    // A master waits this long for more replicas before a diskless full sync (default 5 s): its
    // replicas attach at once here, and each cluster would start 5 s later.
    ...(replicas > 0 ? ['--repl-diskless-sync-delay', '0'] : []),
    ...(options.extra ?? []),
  ];
  const nodes: ClusterNode[] = [];
  const stop = async () => {
    for (const n of nodes) {
      await n.proxy?.close();
      await n.server.remove();
    }
  };
  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      if (!options.proxied) {
        const server = await startRedis(common);
        nodes.push({ port: server.port, announced: server.port, proxy: undefined, server });
        continue;
      }
      // The proxy first (it needs the node's port), the node then told to announce it.
      const port = await freePort();
      const proxy = await startTcpProxy(port);
      try {
        const bus = await freePort();
        const server = await startRedis(
          [
            ...common,
            '--cluster-port',
            String(bus),
            '--cluster-announce-ip',
            '127.0.0.1',
            '--cluster-announce-port',
            String(proxy.port),
            '--cluster-announce-bus-port',
            String(bus),
          ],
          { port },
        );
        nodes.push({ port, announced: proxy.port, proxy, server });
      } catch (err) {
        await proxy.close();
        throw err;
      }
    }
    // redis-cli makes the first `masters` nodes listed masters (all on one host, it cannot spread
    // them) and the rest their replicas; which replica serves which master is read back below.
    await exec('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ]);
    await waitFor(async () => {
      for (const n of nodes) {
        const info = await cli(n.port, 'cluster', 'info');
        if (!info.includes('cluster_state:ok')) return false;
        // Every node sees every other, and every replica as one (gossip spreads roles in a
        // moment): a test reading the topology from any node finds each master's replica.
        const view = (await cli(n.port, 'cluster', 'nodes')).trim().split('\n');
        const seen = view.filter((line) => !/fail|handshake|noaddr/.test(line.split(' ')[2] ?? ''));
        if (seen.length !== nodes.length) return false;
        if (seen.filter((line) => /slave/.test(line.split(' ')[2] ?? '')).length !== masters * replicas)
          return false;
        const replication = await cli(n.port, 'info', 'replication');
        if (
          replication.includes('role:slave') &&
          !(
            replication.includes('master_link_status:up') && replication.includes('master_sync_in_progress:0')
          )
        )
          return false;
      }
      // Every master's replicas are attached (a replica may still be joining the cluster).
      let attached = 0;
      for (const n of nodes) {
        const replication = await cli(n.port, 'info', 'replication');
        if (replication.includes('role:master'))
          attached += Number(/connected_slaves:(\d+)/.exec(replication)?.[1] ?? 0);
      }
      return attached === masters * replicas;
    }, 'cluster_state:ok and every replica synced');
  } catch (err) {
    await stop();
    throw err;
  }
  const natMap: Record<string, { host: string; port: number }> = {};
  for (const n of nodes)
    if (n.proxy) natMap[`127.0.0.1:${n.announced}`] = { host: '127.0.0.1', port: n.port };
  return { ports: nodes.map((n) => n.port), nodes, natMap, stop };
}
