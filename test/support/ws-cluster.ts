// Gateway nodes in their own OS processes (test/integration/fixtures/gateway-node.mjs, on the
// built package) for the multi-process ws tests: start, SIGKILL, restart on the same port, stop.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../integration/fixtures/gateway-node.mjs', import.meta.url));
// A node starts in ~0.3 s on an idle machine (Node, ioredis, the built package); 30 s covers a
// 2-core box shared with other test runs.
const START_TIMEOUT_MS = 30_000;

/** What gateway-node.mjs reads from its argv (see the fixture's header). */
export interface NodeConfig {
  port?: number;
  redisUrl?: string;
  prefix?: string;
  lease?: string;
  heartbeat?: string;
  sessionTtl?: string;
  maxConnections?: number;
  maxConnectionsPerUser?: number;
  limits?: readonly object[];
  anyOrigin?: boolean;
}

/** Memory of a node process, after two full GCs. */
export interface NodeMemory {
  connections: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

/** A gateway node process; `kill()` is a crash (SIGKILL), `restart()` brings it back on its port. */
export class GatewayProcess {
  readonly config: NodeConfig;
  port = 0;
  pid = 0;
  /** The pids of every process this node ran as, killed ones included. */
  readonly pids: number[] = [];
  /** The pids that were SIGKILLed (their handlers may have stopped between run and record). */
  readonly killed = new Set<number>();
  #child: ChildProcess | undefined;
  #stderr = '';

  private constructor(config: NodeConfig) {
    this.config = config;
  }

  /** Starts a node; with `port` 0 (or none) on a free port, kept across restarts. */
  static async start(config: NodeConfig, execArgv: string[] = []): Promise<GatewayProcess> {
    const node = new GatewayProcess(config);
    await node.#spawn(config.port ?? 0, execArgv);
    return node;
  }

  get alive(): boolean {
    return this.#child !== undefined;
  }

  async #spawn(port: number, execArgv: string[]): Promise<void> {
    const child = fork(FIXTURE, [JSON.stringify({ ...this.config, port })], {
      cwd: root,
      execArgv,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.#child = child;
    this.#stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      this.#stderr = (this.#stderr + d.toString()).slice(-4000);
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(
        () => reject(new Error(`node did not start: ${this.#stderr}`)),
        START_TIMEOUT_MS,
      );
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf('\n');
        if (nl >= 0) {
          clearTimeout(timer);
          resolve(out.slice(0, nl));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`node exited (${code}) before listening: ${this.#stderr}`));
      });
    });
    const started = JSON.parse(line) as { port: number; pid: number };
    this.port = started.port;
    this.pid = started.pid;
    this.pids.push(started.pid);
    child.once('exit', () => {
      if (this.#child === child) this.#child = undefined;
    });
  }

  /** A crash: SIGKILL, no drain, no close handshake; resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    this.killed.add(this.pid);
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
    this.#child = undefined;
  }

  /** Starts the node again on the same port (after `kill`). */
  async restart(execArgv: string[] = []): Promise<void> {
    if (this.#child !== undefined) throw new Error('restart of a live node');
    await this.#spawn(this.port, execArgv);
  }

  /** The node's memory after two full GCs (needs `--expose-gc` in execArgv). */
  memory(): Promise<NodeMemory> {
    const child = this.#child;
    if (child === undefined) return Promise.reject(new Error('node not running'));
    return new Promise((resolve) => {
      const onMessage = (msg: { op?: string } & NodeMemory) => {
        if (msg?.op !== 'mem') return;
        child.off('message', onMessage);
        resolve(msg);
      };
      child.on('message', onMessage);
      child.send({ op: 'mem' });
    });
  }

  /** SIGTERM (the node drains) and wait for the exit; SIGKILL after `ms`. */
  async stop(ms = 5_000): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    await gone;
    clearTimeout(timer);
    this.#child = undefined;
  }
}
