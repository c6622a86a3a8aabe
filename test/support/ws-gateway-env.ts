// What the gateway integration tests share: Redis stores of their own clients under one run
// prefix (removed after the file), and gateways and raw clients closed after each test.
import { Redis } from 'ioredis';
import { afterAll, afterEach } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { createGateway, type Gateway, type GatewayOptions } from '../../src/ws/index.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from '../integration/redis-env.js';
import { type Frame, open, type RawClient } from './ws-raw-client.js';

/** The token is the user: tests name users by their tokens. */
export const tokenAuth = (t: string | undefined) => t ?? null;

/**
 * Registers the file's clean-up hooks and answers its helpers. `auth` is every gateway's default
 * (a test's options override it).
 */
export function gatewayEnv(tag: string, auth?: GatewayOptions['auth']) {
  const prefix = runPrefix(tag);
  const redisClients: Redis[] = [];
  const gateways: Gateway[] = [];
  const clients: RawClient[] = [];
  afterAll(async () => {
    const raw = new Redis(REDIS_URL);
    await cleanupPrefix(raw, prefix);
    raw.disconnect();
    for (const c of redisClients) c.disconnect();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.terminate();
    for (const g of gateways.splice(0)) await g.close({ drain: '200ms' });
  });
  return {
    prefix,
    /** Closed after each test (gateways, raw clients) or the file (Redis clients): push more. */
    gateways,
    clients,
    redisClients,
    /** A Redis store of its own client, as another process would have: nodes share only Redis. */
    redisStore(): Store {
      const client = new Redis(REDIS_URL);
      redisClients.push(client);
      return createRedisStore({ client, prefix });
    },
    async gateway(options: Omit<GatewayOptions, 'port'> = {}): Promise<Gateway> {
      const g = await createGateway({ port: 0, ...(auth === undefined ? {} : { auth }), ...options });
      gateways.push(g);
      return g;
    },
    async connect(g: Gateway, session: string, hello: Frame = {}) {
      const x = await open(g.port as number, session, hello);
      clients.push(x.client);
      return x;
    },
  };
}
