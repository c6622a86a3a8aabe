import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Duration } from '../core/duration.js';
import { observing } from '../core/observer.js';
import { timerDuration } from '../core/timer-delay.js';
import { createLimiter } from '../limiter/limiter.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { wsSessions, wsShared } from './backend.js';
import { Connection } from './connection.js';
import type { GatewayEvent } from './events.js';
import type { JsonValue } from './frames.js';
import { GatewayNode } from './gateway-node.js';
import { type AuthResult, type GatewayOptions, resolveGatewayOptions } from './gateway-options.js';
import { createHeartbeat } from './heartbeat.js';
import { WS_SUBPROTOCOL } from './limits.js';
import type { StreamPosition } from './user-streams.js';

/** A running gateway node. */
export interface Gateway {
  /** The port it listens on (with `port`; `undefined` when attached to a `server`). */
  readonly port: number | undefined;
  /** Open WebSockets on this node. */
  readonly connections: number;
  /** The store the node keeps its state in (give the same one to `createPublisher` elsewhere). */
  readonly store: Store;
  /**
   * Appends a message to `user`'s stream and wakes the node holding the user's connections, on
   * any node of the deployment. With `id`, a retry of the same publish appends nothing.
   */
  publish(user: string, type: string, body: JsonValue, options?: { id?: string }): Promise<StreamPosition>;
  /**
   * Stops taking connections, tells each client to reconnect elsewhere (DRAINING, close 1001, with
   * its resume position), waits for the handlers already running (at most `drain`, default
   * `'10s'`), then closes. Idempotent.
   */
  close(options?: { drain?: Duration }): Promise<void>;
}

/**
 * The anonymous user of a gateway without `auth`: every connection is this user, and a `hello`
 * with a token is refused (a token nobody checks would be trusted silently).
 */
const defaultAuth = (token: string | undefined): AuthResult => (token === undefined ? 'anonymous' : null);

/**
 * Per-frame bound of the `ws` parser: twice the protocol's frame bound. A frame up to it is read
 * and answered FRAME_TOO_LARGE with an error frame naming the bound; a larger one is cut by `ws`
 * (close 1009) before it is buffered whole, so one frame costs the node at most 128 KiB.
 */
const PAYLOAD_FACTOR = 2;

/**
 * Starts a gateway node (docs/ws.md): WebSockets speaking docs/ws-protocol.md, with client
 * messages decided exactly once and in order per session, server messages resumable on any node,
 * cluster-wide limits, heartbeats judged by this node's own awake time, bounded send buffers.
 *
 * @example
 * ```ts
 * import { createGateway } from 'onceflow/ws';
 *
 * const gateway = await createGateway({
 *   port: 0,
 *   handlers: { 'chat.send': (m) => gateway.publish(m.user, 'chat.echo', m.body) },
 *   limits: [{ by: 'user', algorithm: 'sliding-window', limit: 20, window: '1s' }],
 * });
 * await gateway.publish('anonymous', 'note', { text: 'waits in the stream until read' });
 * await gateway.close();
 * ```
 */
export async function createGateway(options: GatewayOptions): Promise<Gateway> {
  const o = resolveGatewayOptions(options);
  const store = options.store ?? memoryStore();
  const shared = wsShared(store, options.streams ?? {});
  const sessions = wsSessions(store, shared, {
    maxInFlight: o.maxInFlight,
    sessionTtlMs: o.sessionTtlMs,
    leaseMs: o.leaseMs,
  });
  const limiter =
    options.limits === undefined || options.limits.length === 0
      ? undefined
      : createLimiter({ store, name: 'ws', limits: [...options.limits] });
  const heartbeat = createHeartbeat<Connection>({
    interval: o.heartbeatMs,
    timeout: 2 * o.heartbeatMs,
    // Told only after connections exist, so after `node` below is set.
    onVerdict: (c, verdict, stalledMs) =>
      node.emit({ part: 'gateway', type: 'heartbeat', connection: c.id, verdict, stalledMs }),
  });
  const node = new GatewayNode(
    o,
    sessions,
    shared.streams,
    shared.live,
    limiter,
    heartbeat,
    options.send ?? {},
    options.auth ?? defaultAuth,
    observing<GatewayEvent>(options.observer, 'observer'),
  );
  const stopHeartbeat = heartbeat.start({
    drop: (c) => c.fail('HEARTBEAT_TIMEOUT', `nothing heard for ${2 * o.heartbeatMs} ms`),
    ping: (c) => c.ping(),
  });

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: PAYLOAD_FACTOR * o.maxFrameBytes,
    clientTracking: false,
    // parseClientFrame checks UTF-8 (BAD_ENCODING, with an error frame, close 1008); `ws` would
    // close a text frame that is not UTF-8 itself (1007, no error frame) before the node saw it.
    skipUTF8Validation: true,
    handleProtocols: (protocols) => (protocols.has(WS_SUBPROTOCOL) ? WS_SUBPROTOCOL : false),
  });
  const server: Server =
    (options.server as Server | undefined) ??
    createServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('a WebSocket endpoint (onceflow.v1)\n');
    });
  let nextId = 1;
  let draining = false;

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node removes its own error listener before 'upgrade': a peer's reset would otherwise be an
    // uncaught error (the process's end) on a socket refused below.
    socket.on('error', () => {});
    // Synchronous, in the server's 'upgrade' event: a throw here (a request target URL cannot
    // parse, an `origins` function that throws) would end the process.
    let pathname: string;
    let allowed: boolean;
    try {
      pathname = new URL(request.url ?? '/', 'http://localhost').pathname;
      allowed = originAllowed(options.origins, request);
    } catch {
      return refuse(socket, 400, 'request');
    }
    if (pathname !== o.path) {
      // Another endpoint's upgrade on a shared server: leave it to its own listener.
      if (options.server !== undefined) return;
      return refuse(socket, 404, 'path');
    }
    if (!allowed) return refuse(socket, 403, 'origin');
    wss.handleUpgrade(request, socket, head, (ws) => {
      const ip = clientIp(request, options.trustProxy === true);
      const c = new Connection(nextId++, ws, request, ip, node);
      node.connections.add(c);
      if (draining) c.fail('DRAINING', 'node shutting down');
      else if (node.connections.size > o.maxConnections)
        c.fail('TOO_MANY_CONNECTIONS', `the node holds ${o.maxConnections} connections (maxConnections)`);
    });
  };
  const refuse = (socket: Duplex, status: 400 | 403 | 404, reason: 'origin' | 'path' | 'request') => {
    node.emit({ part: 'gateway', type: 'refused', reason, status });
    const text = status === 400 ? 'Bad Request' : status === 403 ? 'Forbidden' : 'Not Found';
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\n\r\n`);
  };
  server.on('upgrade', onUpgrade);
  if (options.port !== undefined) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port, o.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      // The port is taken (or the host is not ours): nothing of the node may outlive the error.
      server.off('upgrade', onUpgrade);
      stopHeartbeat();
      wss.close();
      throw err;
    }
  }

  let closing: Promise<void> | undefined;
  const gateway: Gateway = {
    get port() {
      return options.port === undefined ? undefined : (server.address() as AddressInfo).port;
    },
    get connections() {
      return node.connections.size;
    },
    store,
    async publish(user, type, body, publishOptions) {
      const at = await shared.streams.publish(user, type, body, publishOptions);
      await shared.live.published(user);
      return at;
    },
    close(closeOptions) {
      closing ??= (async () => {
        const drainMs = timerDuration('drain', closeOptions?.drain ?? '10s');
        draining = true;
        server.off('upgrade', onUpgrade);
        const open = [...node.connections];
        for (const c of open) c.fail('DRAINING', 'node shutting down');
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.all(open.map((c) => c.idle())),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, drainMs);
          }),
        ]);
        clearTimeout(timer);
        stopHeartbeat();
        wss.close();
        if (options.server === undefined) {
          server.closeAllConnections();
          await new Promise<void>((resolve) => server.close(() => resolve()));
        }
      })();
      return closing;
    },
  };
  aborts.set(gateway, async () => {
    draining = true;
    server.off('upgrade', onUpgrade);
    for (const c of [...node.connections]) c.abort();
    stopHeartbeat();
    wss.close();
    if (options.server === undefined) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
  return gateway;
}

const aborts = new WeakMap<Gateway, () => Promise<void>>();

/**
 * Ends a gateway as a crash looks to its clients: every socket destroyed at once, no error frame,
 * no close handshake, no drain. For the demo and tests of node deaths inside one process (the
 * handlers already running still finish here, which a real crash would not let them).
 */
export function abortGateway(gateway: Gateway): Promise<void> {
  const abort = aborts.get(gateway);
  if (abort === undefined) throw new Error('not a gateway made by createGateway');
  return abort();
}

/** The default: no Origin (not a browser), or the page's origin is this host; else the list or function. */
function originAllowed(origins: GatewayOptions['origins'], request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  if (typeof origins === 'function') return origins(origin, request) === true;
  if (origins !== undefined) return origins.includes(origin);
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

function clientIp(request: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = request.headers['x-forwarded-for'];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    if (first !== undefined && first.length > 0) return first;
  }
  return request.socket.remoteAddress ?? 'unknown';
}
