import type { Server } from 'node:http';
import { parseArgs } from 'node:util';
import type { Store } from '../store/store.js';
import { DemoFailure } from './failure.js';
import { redactUrl } from './redact-url.js';
import { type AttachedMetrics, attachMetrics } from './status/metrics-source.js';
import { statusHandler } from './status/status-handler.js';
import { createStatusServer, type Listening, listen } from './status/status-server.js';

/** The help text of `onceflow serve`. */
export const SERVE_HELP = `Usage: onceflow serve [--gateway] [--port N] [--host H] [--store URL] [options]

Serves onceflow's status on one port: /metrics (Prometheus text), /healthz (JSON: does the store
answer, and how fast; 503 when it does not within 1 s) and / (a live status page, polling
/status.json each second: ledger outcomes, limiter decisions, reorder gaps, stream lag and dead
letters, gateway connections, store latency). Needs the prom-client package.

With --gateway it also runs one onceflow/ws gateway node on the same port (docs/ws.md): WebSocket
clients (onceflow/ws/client) send messages handled exactly once in order per session, and receive
their user's stream, resumable on any node of the same store. Run several nodes on one Redis (or
Redis Cluster) behind a load balancer; a backend publishes to a user with createPublisher({ store })
on the same store. The node's one handler is \`echo\`: the body goes back to the sender's stream
(for trying it out; an application runs createGateway in its own program with its own handlers).

Options:
  --gateway          also run a gateway node (WebSocket upgrades on /)
  --port N           the port (default 8080; 0 picks a free one, printed)
  --host H           the interface (default 127.0.0.1; 0.0.0.0 to expose the node)
  --store URL        memory (default: this process only) or redis://host:port[/db] (a cluster of nodes;
                     redis+cluster://host:port for a Redis Cluster)
  --prefix P         the key prefix on Redis (default onceflow:)
  --heartbeat D      with --gateway: ping interval (default 15s); silent clients are dropped after twice that
  --dev-users        with --gateway: take each client's token as its user id, unchecked (for trying
                     out only; without it every client is the user "anonymous" and tokens are refused)
  -h, --help         this help

Prints its address, then runs until SIGINT/SIGTERM: gateway clients are told to reconnect
elsewhere (close 1001) with their resume position; handlers already running finish. Exit codes:
0 stopped; 1 failed (the store could not be reached, the port is in use); 2 invalid options.
`;

/** Why the options were refused (exit code 2). */
export class ServeUsageError extends Error {}

const GATEWAY_ONLY = ['heartbeat', 'dev-users'] as const;

/** Runs `onceflow serve` until a signal; resolves to the exit code. */
export async function serveCommand(args: string[], out: NodeJS.WritableStream): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      gateway: { type: 'boolean' },
      port: { type: 'string' },
      host: { type: 'string' },
      store: { type: 'string' },
      prefix: { type: 'string' },
      heartbeat: { type: 'string' },
      'dev-users': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    out.write(SERVE_HELP);
    return 0;
  }
  if (values.gateway !== true)
    for (const name of GATEWAY_ONLY)
      if (values[name] !== undefined) throw new ServeUsageError(`\`--${name}\` is an option of --gateway`);
  const port = portOf(values.port);
  const host = values.host ?? '127.0.0.1';
  const command = values.gateway === true ? 'onceflow serve --gateway' : 'onceflow serve';
  const metrics = await attachMetrics(command);
  const { store: raw, close: closeStore, kind } = await storeFrom(values.store ?? 'memory', values.prefix);
  const store = metrics.observeStore(raw);
  const server = createStatusServer(
    statusHandler({
      registry: metrics.registry,
      // A read of a ledger no one writes: one round trip that touches nothing.
      ping: () => raw.ledgerBalances('onceflow-healthz', 'healthz'),
      store: kind,
      title: command,
    }),
  );
  let gateway: Awaited<ReturnType<typeof import('../ws/index.js').createGateway>> | undefined;
  let listening: Listening;
  try {
    if (values.gateway === true) gateway = await startGateway(values, server, store, metrics);
    listening = await listen(server, port, host);
  } catch (err) {
    await gateway?.close({ drain: 0 });
    await closeStore();
    throw err;
  }
  const where = values.store === undefined ? 'memory' : redactUrl(values.store);
  const ws = gateway === undefined ? '' : `, gateway ws://${listening.url.slice('http://'.length)}`;
  out.write(`onceflow serve listening on ${listening.url}${ws} (store: ${where}; /metrics, /healthz)\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  if (gateway !== undefined) {
    out.write(`${signal}: draining ${gateway.connections} connections\n`);
    await gateway.close();
  } else out.write(`${signal}: stopping\n`);
  await listening.close();
  await closeStore();
  return 0;
}

/** `--port`: a whole number from 0 to 65535 (default 8080). */
function portOf(text: string | undefined): number {
  if (text === undefined) return 8080;
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port <= 65_535))
    throw new ServeUsageError(`\`--port\` must be a whole number from 0 to 65535, got ${text}`);
  return port;
}

/** The gateway node of `--gateway`, on the status server (one port for both). */
async function startGateway(
  values: { heartbeat?: string | undefined; 'dev-users'?: boolean | undefined },
  server: Server,
  store: Store,
  metrics: AttachedMetrics,
) {
  const { createGateway } = await import('../ws/index.js');
  let gateway: Awaited<ReturnType<typeof createGateway>>;
  try {
    gateway = await createGateway({
      server,
      store,
      observer: metrics.observer,
      ...(values.heartbeat === undefined ? {} : { heartbeat: values.heartbeat as `${number}s` }),
      ...(values['dev-users'] === true ? { auth: (token: string | undefined) => token ?? null } : {}),
      handlers: { echo: (m) => gateway.publish(m.user, 'echo', m.body) },
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_INVALID_OPTION')
      throw new ServeUsageError((err as Error).message);
    throw err;
  }
  return gateway;
}

/** The store of `--store`: the memory one, or a Redis store on a client of its own. */
async function storeFrom(
  url: string,
  prefix: string | undefined,
): Promise<{ store: Store; close: () => Promise<void>; kind: string }> {
  if (url === 'memory' || url === 'memory:') {
    const { memoryStore } = await import('../store/memory/memory-store.js');
    return { store: memoryStore(), close: async () => {}, kind: 'memory' };
  }
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  const cluster = parsed?.protocol === 'redis+cluster:';
  if (parsed === undefined || !['redis:', 'rediss:', 'redis+cluster:'].includes(parsed.protocol))
    throw new ServeUsageError(
      `\`--store\` must be memory, redis://host:port[/db] or redis+cluster://host:port, got ${redactUrl(url)}`,
    );
  let ioredis: { Redis: typeof import('ioredis').Redis; Cluster: typeof import('ioredis').Cluster };
  try {
    ioredis = await import('ioredis');
  } catch (cause) {
    throw new DemoFailure('`--store redis://` needs the ioredis package: npm install ioredis', { cause });
  }
  const { createRedisStore } = await import('../redis/index.js');
  // Auto-pipelining: a turn's scripts of many connections in one write (docs/ws.md). Connected
  // explicitly: the first failed attempt rejects at once, where a first command would wait out
  // ioredis's retries (seconds) before an unreachable store is reported.
  const client = cluster
    ? new ioredis.Cluster([{ host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || 6379) }], {
        enableAutoPipelining: true,
        lazyConnect: true,
      })
    : new ioredis.Redis(url, { enableAutoPipelining: true, lazyConnect: true });
  // Reconnects are ioredis's; an error event without a listener would end the process. The last
  // one says why a first connection failed (connect() itself only says it closed).
  let lastError: Error | undefined;
  client.on('error', (err: Error) => {
    lastError = err;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (cause) {
    client.disconnect();
    const why = lastError?.message ?? (cause as Error).message;
    throw new DemoFailure(`the store at ${redactUrl(url)} did not answer: ${why}`, { cause });
  }
  return {
    kind: cluster ? 'redis cluster' : 'redis',
    store: createRedisStore({ client, ...(prefix === undefined ? {} : { prefix }) }),
    close: async () => {
      await client.quit().catch(() => client.disconnect());
    },
  };
}
