import { connect, createServer, type Socket } from 'node:net';
import { InvalidArgumentError } from '../core/errors.js';
import { freePort } from './ports.js';

/**
 * A TCP proxy in front of a server (a Redis) that loses what production loses, for fault tests.
 * Point the client at `port`; by default every byte passes both ways.
 */
export interface TcpProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** Connections killed so far (by `cut`, `loseNextReply`, `dropNextScript`). */
  readonly killed: number;
  /**
   * Kills the connection as the successful reply to the next script call (EVAL/EVALSHA) comes
   * back: the script ran, its reply never arrives.
   */
  loseNextReply(): void;
  /** Kills the connection as the next script call goes out: it never ran. */
  dropNextScript(): void;
  /** Keeps new connections waiting (accepted, nothing passed) until `release()`. */
  hold(): void;
  release(): void;
  /**
   * The server becomes unreachable: every open connection is killed, and new ones are closed as
   * they come, until `restore()`. What a network partition or a server restart looks like to a
   * client.
   */
  cut(): void;
  /**
   * A silent partition: from now on every byte, both ways, is dropped, and connections stay open
   * (no reset: each end notices only by its own timeouts), new ones included, until `restore()`.
   * Unlike `cut`, what was sent meanwhile is never delivered: the other end never sees it.
   */
  partition(): void;
  /** Ends `cut` and `partition`. */
  restore(): void;
  /** Delays every chunk, both ways, by `ms` from now on (0: none); order is kept. */
  latency(ms: number): void;
  close(): Promise<void>;
}

/** Options of {@link startTcpProxy}. */
export interface TcpProxyOptions {
  /** The upstream host. Default `127.0.0.1`. */
  host?: string;
}

const isScript = (data: Buffer) => /EVAL/i.test(data.toString('latin1'));

/**
 * Starts a {@link TcpProxy} to `upstreamPort` on a free local port. Uses `node:net` only.
 *
 * @example
 * ```ts
 * const redis = await startRedis();
 * const proxy = await startTcpProxy(redis.port);
 * await pingable(proxy.port); // true
 * proxy.cut(); // as if the server were gone
 * await pingable(proxy.port); // false
 * proxy.restore();
 * proxy.latency(20); // every reply 20 ms late, both ways
 * await pingable(proxy.port); // true
 * await proxy.close();
 * await redis.remove(); // stopped, its directory removed
 * ```
 */
export async function startTcpProxy(upstreamPort: number, options: TcpProxyOptions = {}): Promise<TcpProxy> {
  const host = options.host ?? '127.0.0.1';
  let loseReply = false;
  let dropScript = false;
  let holding = false;
  let cut = false;
  let silent = false;
  let delayMs = 0;
  let killed = 0;
  const held: Socket[] = [];
  const open = new Set<Socket>();
  // One per live connection: kills it (both sockets) and counts it once.
  const kills = new Set<() => void>();

  // Writes `data` to `to` after the current latency, in order with what was sent before.
  const delayed = () => {
    let last = Promise.resolve();
    return (to: Socket, data: Buffer) => {
      if (delayMs === 0) {
        last = last.then(() => void to.write(data));
        return;
      }
      const due = Date.now() + delayMs;
      last = last.then(
        () =>
          new Promise<void>((resolve) =>
            setTimeout(
              () => {
                if (!to.destroyed) to.write(data);
                resolve();
              },
              Math.max(0, due - Date.now()),
            ),
          ),
      );
    };
  };

  const wire = (client: Socket) => {
    const upstream = connect(upstreamPort, host);
    open.add(client).add(upstream);
    let scriptSent = false;
    const up = delayed();
    const down = delayed();
    const kill = () => {
      killed++;
      client.destroy();
      upstream.destroy();
    };
    kills.add(kill);
    client.on('data', (data) => {
      if (silent) return;
      if (dropScript && isScript(data)) {
        dropScript = false;
        kill();
        return;
      }
      if (loseReply && isScript(data)) scriptSent = true;
      up(upstream, data);
    });
    upstream.on('data', (data) => {
      if (silent) return;
      // An error reply (NOSCRIPT after another test's SCRIPT FLUSH) means the script did not run:
      // passed on, and the next script call's reply is the one lost.
      if (scriptSent && data[0] === 0x2d) scriptSent = false;
      if (scriptSent && loseReply) {
        loseReply = false;
        scriptSent = false;
        kill();
        return;
      }
      down(client, data);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
      kills.delete(kill);
    };
    for (const socket of [client, upstream]) {
      socket.on('error', close);
      socket.on('close', close);
    }
  };

  const server = createServer((client) => {
    if (cut) {
      killed++;
      client.destroy();
    } else if (holding) {
      client.pause();
      held.push(client);
    } else wire(client);
  });
  // On a port within ONCEFLOW_TEST_PORTS; one taken meanwhile by another process is skipped.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const bound = await new Promise<boolean>((resolve) => {
      const fail = () => resolve(false);
      server.once('error', fail);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', fail);
        resolve(true);
      });
    });
    if (bound) break;
    if (attempt === 5) throw new Error(`proxy: no port to listen on (last tried ${port})`);
  }
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy: no port');
  return {
    port: address.port,
    get killed() {
      return killed;
    },
    loseNextReply: () => {
      loseReply = true;
    },
    dropNextScript: () => {
      dropScript = true;
    },
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const client of held.splice(0)) {
        client.resume();
        wire(client);
      }
    },
    cut: () => {
      cut = true;
      for (const kill of [...kills]) kill();
      for (const socket of held.splice(0)) {
        killed++;
        socket.destroy();
      }
    },
    partition: () => {
      silent = true;
    },
    restore: () => {
      cut = false;
      silent = false;
    },
    latency: (ms) => {
      if (!Number.isSafeInteger(ms) || ms < 0)
        throw new InvalidArgumentError('ms', 'whole milliseconds >= 0', ms);
      delayMs = ms;
    },
    async close() {
      for (const socket of [...open, ...held]) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
