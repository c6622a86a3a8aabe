import { createServer } from 'node:net';

// The ports the fault helpers listen on (servers, cluster buses, proxies). A CI runner or a
// firewalled machine may allow only some ports: `ONCEFLOW_TEST_PORTS=20000-20999` confines every
// helper to them. Without it: 20000-39999, above the registered services most machines run and
// below Linux's default ephemeral range (32768-60999 starts inside it, but a port taken there by
// an outgoing connection is skipped like any other busy port).
const DEFAULT_RANGE = { from: 20_000, to: 39_999 } as const;

/** An inclusive range of TCP ports. */
export interface PortRange {
  readonly from: number;
  readonly to: number;
}

/**
 * The ports the test helpers may use: `ONCEFLOW_TEST_PORTS` (`from-to`, inclusive, e.g.
 * `20000-20999`), else 20000-39999. A malformed value throws, naming the variable: a typo must not
 * silently put the servers on ports a firewall blocks.
 *
 * @example
 * ```ts
 * testPortRange({ ONCEFLOW_TEST_PORTS: '20000-20999' }); // { from: 20000, to: 20999 }
 * testPortRange({}); // { from: 20000, to: 39999 }
 * ```
 */
export function testPortRange(env: Record<string, string | undefined> = process.env): PortRange {
  const given = env['ONCEFLOW_TEST_PORTS'];
  if (given === undefined || given.trim() === '') return DEFAULT_RANGE;
  const match = /^\s*(\d{1,5})\s*-\s*(\d{1,5})\s*$/.exec(given);
  const from = Number(match?.[1]);
  const to = Number(match?.[2]);
  if (match === null || from < 1 || to > 65_535 || from > to) {
    throw new Error(
      `ONCEFLOW_TEST_PORTS must be a port range like 20000-20999 (1-65535, from <= to), got ${JSON.stringify(given)}`,
    );
  }
  return { from, to };
}

/** True when `port` can be bound on 127.0.0.1 now. */
export async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

// Ports this process handed out recently: two helpers started in one turn (a cluster's nodes,
// their buses and proxies) must not get the same port before either has bound it. Forgotten
// after a minute, by when each has bound its port or failed.
const handedOut = new Map<number, number>();
const HANDED_OUT_MS = 60_000;

/**
 * A free port on 127.0.0.1 within {@link testPortRange} (`ONCEFLOW_TEST_PORTS`), not handed out
 * by this process in the last minute. Another process may still take it before it is bound: the
 * helpers that start a server on it retry on another port when it fails to start.
 *
 * @example
 * ```ts
 * const port = await freePort();
 * const redis = await startRedis([], { port });
 * redis.port === port; // true
 * await redis.stop();
 * ```
 */
export async function freePort(): Promise<number> {
  const { from, to } = testPortRange();
  const now = Date.now();
  for (const [port, at] of handedOut) if (now - at > HANDED_OUT_MS) handedOut.delete(port);
  const size = to - from + 1;
  // Random probes first (two processes scanning from the same start would collide), then every
  // port in order, so a small range that is nearly full is still searched to the end.
  const tries = Math.min(size, 200);
  for (let i = 0; i < tries + size; i++) {
    const port = i < tries ? from + Math.floor(Math.random() * size) : from + (i - tries);
    if (handedOut.has(port)) continue;
    if (await portFree(port)) {
      handedOut.set(port, now);
      return port;
    }
  }
  throw new Error(`no free port in ${from}-${to} (ONCEFLOW_TEST_PORTS)`);
}
