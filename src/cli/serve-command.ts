import { parseArgs } from 'node:util';
import type { Store } from '../store/store.js';
import { DemoFailure } from './failure.js';
import { redactUrl } from './redact-url.js';

/** The help text of `onceflow serve`. */
export const SERVE_HELP = `Usage: onceflow serve --gateway [--port N] [--host H] [--store URL] [options]

Runs one onceflow/ws gateway node (docs/ws.md): WebSocket clients (onceflow/ws/client) send
messages handled exactly once in order per session, and receive their user's stream, resumable on
any node of the same store. Run several nodes on one Redis (or Redis Cluster) behind a load
balancer; a backend publishes to a user with createPublisher({ store }) on the same store.
The node's one handler is \`echo\`: the body goes back to the sender's stream (for trying it out;
an application runs createGateway in its own program with its own handlers).

Options:
  --gateway          run a gateway node (the only kind of server so far)
  --port N           the port (default 8080; 0 picks a free one, printed)
  --host H           the interface (default 127.0.0.1; 0.0.0.0 to expose the node)
  --store URL        memory (default: this node only) or redis://host:port[/db] (a cluster of nodes;
                     redis+cluster://host:port for a Redis Cluster)
  --prefix P         the key prefix on Redis (default onceflow:)
  --heartbeat D      ping interval (default 15s); silent clients are dropped after twice that
  --dev-users        take each client's token as its user id, unchecked (for trying out only;
                     without it every client is the user "anonymous" and tokens are refused)
  -h, --help         this help

Stops on SIGINT/SIGTERM: clients are told to reconnect elsewhere (close 1001) with their resume
position; handlers already running finish. Exit codes: 0 stopped; 1 failed (the store could not be
reached); 2 invalid options.
`;

/** Why the options were refused (exit code 2). */
export class ServeUsageError extends Error {}

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
  if (values.gateway !== true) throw new ServeUsageError('`--gateway` is required (the only server so far)');
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!/^\d+$/.test(values.port ?? '8080') || port > 65_535)
    throw new ServeUsageError(`\`--port\` must be a whole number from 0 to 65535, got ${values.port}`);
  const { store, close } = await storeFrom(values.store ?? 'memory', values.prefix);
  const { createGateway } = await import('../ws/index.js');
  let gateway: Awaited<ReturnType<typeof createGateway>>;
  try {
    gateway = await createGateway({
      port,
      host: values.host ?? '127.0.0.1',
      store,
      ...(values.heartbeat === undefined ? {} : { heartbeat: values.heartbeat as `${number}s` }),
      ...(values['dev-users'] === true ? { auth: (token: string | undefined) => token ?? null } : {}),
      handlers: { echo: (m) => gateway.publish(m.user, 'echo', m.body) },
    });
  } catch (err) {
    await close();
    if ((err as { code?: unknown }).code === 'ERR_INVALID_OPTION')
      throw new ServeUsageError((err as Error).message);
    throw err;
  }
  const where = values.store === undefined ? 'memory' : redactUrl(values.store);
  out.write(
    `onceflow gateway listening on ws://${values.host ?? '127.0.0.1'}:${gateway.port}/ (store: ${where})\n`,
  );
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  out.write(`${signal}: draining ${gateway.connections} connections\n`);
  await gateway.close();
  await close();
  return 0;
}

/** The store of `--store`: the memory one, or a Redis store on a client of its own. */
async function storeFrom(
  url: string,
  prefix: string | undefined,
): Promise<{ store: Store; close: () => Promise<void> }> {
  if (url === 'memory' || url === 'memory:') {
    const { memoryStore } = await import('../store/memory/memory-store.js');
    return { store: memoryStore(), close: async () => {} };
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
  // Auto-pipelining: a turn's scripts of many connections in one write (docs/ws.md).
  const client = cluster
    ? new ioredis.Cluster([{ host: parsed.hostname || '127.0.0.1', port: Number(parsed.port || 6379) }], {
        enableAutoPipelining: true,
      })
    : new ioredis.Redis(url, { enableAutoPipelining: true });
  // Reconnects are ioredis's; an error event without a listener would end the process.
  client.on('error', () => {});
  try {
    await client.ping();
  } catch (cause) {
    client.disconnect();
    throw new DemoFailure(`the store at ${redactUrl(url)} did not answer: ${(cause as Error).message}`, {
      cause,
    });
  }
  return {
    store: createRedisStore({ client, ...(prefix === undefined ? {} : { prefix }) }),
    close: async () => {
      await client.quit().catch(() => client.disconnect());
    },
  };
}
