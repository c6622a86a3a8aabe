import type { Server as HttpServer, IncomingMessage } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Duration } from '../core/duration.js';
import { InvalidOptionError } from '../core/errors.js';
import { type Observer, observing } from '../core/observer.js';
import { timerDuration } from '../core/timer-delay.js';
import { isPlainObject, keysOf, knownKeys, positiveInt } from '../core/validate.js';
import type { LimitOptions } from '../limiter/options.js';
import type { Store } from '../store/store.js';
import { createSendPolicy, type SendPolicyOptions } from './backpressure.js';
import type { GatewayEvent } from './events.js';
import { checkHandlers, type Handlers } from './handlers.js';
import { WS_LIMITS } from './limits.js';
import { LEASE_MS } from './session-state.js';
import type { UserStreamsOptions } from './user-streams.js';

/** A limit of the gateway: counted per `user`, per `ip`, per message `type`, or per user and type. */
export interface GatewayLimit extends LimitOptions {
  by: 'user' | 'ip' | 'type' | 'user-type';
}

/** What `auth` answers: the user the connection acts for, or `null` to refuse it (AUTH_FAILED). */
export type AuthResult = string | null;

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** An HTTP(S) server to attach to (its `upgrade` requests on `path`). One of `server` and `port`. */
  server?: HttpServer | HttpsServer;
  /** A port to listen on (0: any free one, see `gateway.port`). One of `server` and `port`. */
  port?: number;
  /** The interface to listen on with `port`. Default `'127.0.0.1'`: exposing a node is a choice. */
  host?: string;
  /** The URL path of the WebSocket endpoint. Default `'/'`. */
  path?: string;
  /**
   * Where sessions, user streams and limits live. Default: a memory store of this process (one
   * node). `createRedisStore({ client })` on a Redis or Redis Cluster client for a cluster of nodes.
   */
  store?: Store;
  /** A handler per message type; a type without one is acked `rejected` UNKNOWN_TYPE. */
  handlers?: Handlers;
  /**
   * The user a connection acts for, from the `hello` token (and the upgrade request). Default:
   * every connection is the user `'anonymous'` and a token is refused, so a deployment that
   * forgets `auth` does not silently trust tokens it never checks.
   */
  auth?: (token: string | undefined, request: IncomingMessage) => AuthResult | Promise<AuthResult>;
  /**
   * Which page origins may connect (the `Origin` header browsers send): a list of origins
   * (`'https://app.example.com'`), or a function. Default: a request without `Origin` (not a
   * browser) and a same-origin request (`Origin` host equals the `Host` header); every other
   * origin is refused with 403 before the upgrade, against cross-site WebSocket hijacking.
   */
  origins?: readonly string[] | ((origin: string, request: IncomingMessage) => boolean);
  /** Cluster-wide limits, all decided together on the store for each message (one multi-limit take). */
  limits?: readonly GatewayLimit[];
  /** The client's IP for `by: 'ip'`: the socket's peer, or with `trustProxy` the first `X-Forwarded-For` hop. */
  trustProxy?: boolean;
  /**
   * Messages a client may have without an ack; the session keeps that many outcomes. Default 64:
   * at 10 ms a round trip a client then sends 6,400 messages a second, and 64 outcomes x ~200 B
   * is ~13 KB of store per session. At most WS_LIMITS.maxInFlightCap.
   */
  maxInFlight?: number;
  /** How often the node pings. Default `'15s'` (under the 60 s idle timeout of the usual proxies). */
  heartbeat?: Duration;
  /**
   * How long a session's state outlives its last connection. Default `'10m'`. At least twice
   * `heartbeat`: an open connection's pings keep its state alive.
   */
  sessionTtl?: Duration;
  /** How long a handler holds its message against a re-send on another node. Default `'30s'`. */
  lease?: Duration;
  /**
   * The largest frame a client may send, announced in `welcome`. Default and most
   * WS_LIMITS.maxFrameBytes (64 KiB).
   */
  maxFrameBytes?: number;
  /**
   * Connections this node holds; past it a new one is refused with TOO_MANY_CONNECTIONS. Default
   * 10,000: ~20 KiB of RSS each when idle (bench/ws-gateway.bench.mjs) is ~200 MiB, and 10,000
   * sockets stay under the usual 20,000-65,536 open-file limit with room for the store's.
   */
  maxConnections?: number;
  /** Connections one user may hold on this node. Default 16 (tabs and devices of one person). */
  maxConnectionsPerUser?: number;
  /** The send buffer of each connection (watermarks, cap, grace): see createSendPolicy. */
  send?: SendPolicyOptions;
  /** The users' streams (retention, body bound). Every node and publisher must pass the same. */
  streams?: UserStreamsOptions;
  /**
   * Receives the gateway's events (see {@link GatewayEvent}): every state change of a connection
   * and each decision worth counting. A throw is reported once and never ends a connection or
   * skips its bookkeeping, as every part's observer (docs/observability.md).
   */
  observer?: Observer<GatewayEvent>;
}

const GATEWAY_OPTIONS = keysOf<GatewayOptions>({
  server: true,
  port: true,
  host: true,
  path: true,
  store: true,
  handlers: true,
  auth: true,
  origins: true,
  limits: true,
  trustProxy: true,
  maxInFlight: true,
  heartbeat: true,
  sessionTtl: true,
  lease: true,
  maxFrameBytes: true,
  maxConnections: true,
  maxConnectionsPerUser: true,
  send: true,
  streams: true,
  observer: true,
});

/** The validated options, with every default filled in. */
export interface ResolvedGatewayOptions {
  readonly handlers: Handlers;
  readonly maxInFlight: number;
  readonly heartbeatMs: number;
  readonly sessionTtlMs: number;
  readonly leaseMs: number;
  readonly maxFrameBytes: number;
  readonly maxConnections: number;
  readonly maxConnectionsPerUser: number;
  readonly path: string;
  readonly host: string;
}

const BY = ['user', 'ip', 'type', 'user-type'] as const;

/** Checks `options` (unknown keys refused with a did-you-mean) and fills in the defaults. */
export function resolveGatewayOptions(options: GatewayOptions): ResolvedGatewayOptions {
  if (!isPlainObject(options as unknown))
    throw new InvalidOptionError('options', 'an object like { port, handlers }', options);
  knownKeys('', options, GATEWAY_OPTIONS);
  if ((options.server === undefined) === (options.port === undefined))
    throw new InvalidOptionError('server', 'given, or `port` given (exactly one of them)', options.server);
  if (
    options.port !== undefined &&
    (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
  )
    throw new InvalidOptionError('port', 'an integer from 0 to 65535', options.port);
  if (options.auth !== undefined && typeof options.auth !== 'function')
    throw new InvalidOptionError('auth', 'a function (token, request) => user | null', options.auth);
  observing(options.observer, 'observer');
  const origins = options.origins;
  if (
    origins !== undefined &&
    typeof origins !== 'function' &&
    !(Array.isArray(origins) && origins.every((o) => typeof o === 'string'))
  )
    throw new InvalidOptionError(
      'origins',
      'a list of origins or a function (origin, request) => boolean',
      origins,
    );
  if (options.limits !== undefined && !Array.isArray(options.limits))
    throw new InvalidOptionError('limits', 'an array of limits, each with `by`', options.limits);
  for (const [i, limit] of (options.limits ?? []).entries()) {
    if (!BY.includes((limit as GatewayLimit | undefined)?.by as (typeof BY)[number]))
      throw new InvalidOptionError(
        `limits[${i}].by`,
        `one of ${BY.map((b) => `'${b}'`).join(', ')}`,
        limit?.by,
      );
  }
  if (options.trustProxy !== undefined && typeof options.trustProxy !== 'boolean')
    throw new InvalidOptionError('trustProxy', 'a boolean', options.trustProxy);
  // Checked here, not at the first connection: a connection is made in the upgrade callback,
  // where a throw would take the process down.
  createSendPolicy(options.send ?? {});
  // A stream message makes a frame of up to the protocol's bound: a cap below it could never
  // send that message, and its user would be closed on it at every resume.
  const cap = (options.send as { cap?: unknown } | undefined)?.cap;
  if (typeof cap === 'number' && cap < WS_LIMITS.maxFrameBytes)
    throw new InvalidOptionError(
      'send.cap',
      `at least ${WS_LIMITS.maxFrameBytes} bytes (the largest frame a stream message makes)`,
      cap,
    );
  const path = options.path ?? '/';
  if (typeof path !== 'string' || !path.startsWith('/'))
    throw new InvalidOptionError('path', "a URL path starting with '/'", path);
  const host = options.host ?? '127.0.0.1';
  if (typeof host !== 'string' || host.length === 0)
    throw new InvalidOptionError('host', 'a host name or address', host);
  const maxInFlight = positiveInt('maxInFlight', options.maxInFlight ?? 64);
  if (maxInFlight > WS_LIMITS.maxInFlightCap)
    throw new InvalidOptionError('maxInFlight', `at most ${WS_LIMITS.maxInFlightCap}`, maxInFlight);
  const heartbeatMs = timerDuration('heartbeat', options.heartbeat ?? '15s');
  if (heartbeatMs < WS_LIMITS.minHeartbeatMs || heartbeatMs > WS_LIMITS.maxHeartbeatMs)
    throw new InvalidOptionError(
      'heartbeat',
      `from ${WS_LIMITS.minHeartbeatMs} ms to ${WS_LIMITS.maxHeartbeatMs} ms`,
      options.heartbeat,
    );
  const sessionTtlMs = timerDuration('sessionTtl', options.sessionTtl ?? '10m');
  if (sessionTtlMs < 1000 || sessionTtlMs > WS_LIMITS.maxSessionTtlMs)
    throw new InvalidOptionError(
      'sessionTtl',
      `from 1 s to ${WS_LIMITS.maxSessionTtlMs} ms`,
      options.sessionTtl,
    );
  // An open connection keeps its session state alive from its pings (Connection.ping): with
  // pings at most half a TTL apart, the state is refreshed at least every half TTL while open.
  if (sessionTtlMs < 2 * heartbeatMs)
    throw new InvalidOptionError(
      'sessionTtl',
      `at least twice \`heartbeat\` (${2 * heartbeatMs} ms): the pings keep an open session's state alive`,
      options.sessionTtl,
    );
  const leaseMs = timerDuration('lease', options.lease ?? LEASE_MS.default);
  if (leaseMs < LEASE_MS.min || leaseMs > LEASE_MS.max)
    throw new InvalidOptionError('lease', `from ${LEASE_MS.min} ms to ${LEASE_MS.max} ms`, options.lease);
  const maxFrameBytes = positiveInt('maxFrameBytes', options.maxFrameBytes ?? WS_LIMITS.maxFrameBytes);
  if (maxFrameBytes < 1024 || maxFrameBytes > WS_LIMITS.maxFrameBytes)
    throw new InvalidOptionError('maxFrameBytes', `from 1024 to ${WS_LIMITS.maxFrameBytes}`, maxFrameBytes);
  return {
    handlers: checkHandlers(options.handlers ?? {}),
    maxInFlight,
    heartbeatMs,
    sessionTtlMs,
    leaseMs,
    maxFrameBytes,
    maxConnections: positiveInt('maxConnections', options.maxConnections ?? 10_000),
    maxConnectionsPerUser: positiveInt('maxConnectionsPerUser', options.maxConnectionsPerUser ?? 16),
    path,
    host,
  };
}
