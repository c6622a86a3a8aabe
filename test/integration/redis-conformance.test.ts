import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { startTcpProxy } from '../../src/testing/index.js';
import { conformanceSuite, outageConformance } from '../support/model-suites/conformance.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

for (const mode of ['standalone', 'cluster'] as const) {
  const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
  const prefix = runPrefix('conf');
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  conformanceSuite({
    label: `Redis store (${mode})`,
    store: createRedisStore({ client, prefix }),
    retention: (n) => createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: n } }),
    prefix: 'c:',
  });
}

describe('conformance: Redis store cut off its server (limiter-outage)', () => {
  it('rejects with a StoreError while the proxy is cut, and charges nothing once it is back', async () => {
    const url = new URL(REDIS_URL);
    const proxy = await startTcpProxy(Number(url.port || 6379), { host: url.hostname });
    // No offline queue: a command sent while the connection is down fails at once, as a client
    // configured for a limiter should (it never runs later).
    const client = new Redis({
      port: proxy.port,
      host: '127.0.0.1',
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => 20,
    });
    const prefix = runPrefix('conf-outage');
    const store = createRedisStore({ client, prefix });
    const ready = async () => {
      for (let i = 0; i < 250 && client.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 20));
      expect(client.status).toBe('ready');
    };
    try {
      await ready();
      const outage = {
        begin: async () => {
          proxy.cut();
          for (let i = 0; i < 250 && client.status === 'ready'; i++)
            await new Promise((r) => setTimeout(r, 5));
        },
        end: async () => {
          proxy.restore();
          await ready();
        },
      };
      await outageConformance(store, outage);
      expect(proxy.killed).toBeGreaterThan(0);
    } finally {
      await cleanupPrefix(client, prefix).catch(() => {});
      client.disconnect();
      await proxy.close();
    }
  });
});
