// The two ways a Hono app is reached in the hono-* tests: a real HTTP server (@hono/node-server on
// a free port, global fetch) and the Web-standard path with no server (app.fetch(new Request)),
// and the two stores every case runs on: memory and the real Redis under a unique prefix.
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { Redis } from 'ioredis';
import { afterAll, afterEach } from 'vitest';
import type { Clock } from '../../src/core/clock.js';
import { type IdempotencyKeyOptions, idempotencyKey } from '../../src/hono/index.js';
import { createIdempotency } from '../../src/idempotency/idempotency.js';
import { memoryStore } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

/** Sends requests to one app; `close` ends its server, if any. */
export interface HonoClient {
  send(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export interface Transport {
  readonly name: string;
  open(app: Hono): Promise<HonoClient>;
}

export const TRANSPORTS: readonly Transport[] = [
  {
    name: 'node-server',
    async open(app) {
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
      if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      return {
        send: (path, init) => fetch(`http://127.0.0.1:${port}${path}`, init),
        close: () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            // Keep-alive sockets of fetch's pool would hold close() open until they time out.
            if ('closeAllConnections' in server) server.closeAllConnections();
          }),
      };
    },
  },
  {
    name: 'web (app.fetch)',
    async open(app) {
      return {
        send: async (path, init) => app.fetch(new Request(`http://localhost${path}`, init)),
        close: async () => {},
      };
    },
  },
];

export interface StoreBinding {
  readonly name: string;
  /** A store; on Redis, the keys go under this file's prefix and are deleted after the file. */
  make(clock?: Clock): Store;
}

/** Memory and Redis; call at the top level of a test file (registers the Redis cleanup). */
export function storeBindings(file: string): readonly StoreBinding[] {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix(file);
  let n = 0;
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  return [
    { name: 'memory', make: (clock) => (clock === undefined ? memoryStore() : memoryStore({ clock })) },
    // A prefix per store: each case starts from nothing, whatever the names it picks.
    { name: 'redis', make: () => createRedisStore({ client, prefix: `${prefix}${n++}:` }) },
  ];
}

/** Every transport with every store, as `describe` titles and their pair. */
export function matrix(file: string): [string, Transport, StoreBinding][] {
  const stores = storeBindings(file);
  return TRANSPORTS.flatMap((t) =>
    stores.map((s): [string, Transport, StoreBinding] => [`${t.name}, ${s.name}`, t, s]),
  );
}

/**
 * Inside a describe of the matrix: `middleware(options)`, an idempotencyKey of a fresh name on
 * the binding's store, and `open(app)`, the transport's client for `app` (closed after each test).
 */
export function idempotencyHarness(transport: Transport, binding: StoreBinding, name: string) {
  let client: HonoClient | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });
  let n = 0;
  const middleware = (options: Partial<IdempotencyKeyOptions> = {}) =>
    idempotencyKey({
      idempotency: createIdempotency({ store: binding.make(), name: `${name}-${n++}` }),
      ...options,
    });
  const open = async (app: Hono) => {
    client = await transport.open(app);
    return client.send;
  };
  return { middleware, open };
}
