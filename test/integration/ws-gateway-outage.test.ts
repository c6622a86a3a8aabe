// The store unreachable under an open connection (docs/ws-protocol.md section 8, INTERNAL): a
// message the node cannot decide ends the connection with INTERNAL (1011), the node keeps running,
// and once the store is back the client's re-send is decided once. The ws state's commands are
// bounded by the client's own retries (maxRetriesPerRequest), not the store's `timeout`: the
// client here gives up after one retry.
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import { type StartedRedis, startRedis } from '../../src/testing/redis-servers.js';
import { createGateway, type Gateway } from '../../src/ws/index.js';
import { quietClients } from '../support/quiet-clients.js';
import { newSession, open } from '../support/ws-raw-client.js';

let redis: StartedRedis | undefined;
let gateway: Gateway | undefined;
let client: Redis | undefined;
const quiet = quietClients();
afterAll(async () => {
  await gateway?.close({ drain: '200ms' });
  quiet.disconnectAll();
  await redis?.remove();
});

describe('store outage', () => {
  it('a message during an outage: INTERNAL (1011); after it, the re-send is decided once', async () => {
    redis = await startRedis();
    client = quiet.client({ port: redis.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    const store = createRedisStore({ client, prefix: 'ws-outage:', timeout: '1s' });
    const ran: number[] = [];
    gateway = await createGateway({
      port: 0,
      store,
      heartbeat: '1s',
      handlers: { t: (m) => void ran.push(m.seq) },
    });
    const { client: c } = await open(gateway.port as number, newSession());
    c.msg(1, 'a', 't');
    await c.waitFor((f) => f.op === 'ack' && f.seq === 1);
    await redis.stop();
    const t0 = performance.now();
    c.msg(2, 'b', 't');
    const { error, close } = await c.failure(30_000);
    const took = performance.now() - t0;
    expect(error?.code).toBe('INTERNAL');
    expect(close.code).toBe(1011);
    expect(took).toBeLessThan(10_000);
    expect(ran).toEqual([1]);

    redis = await startRedis([], { port: redis.port, dir: redis.dir });
    const session = newSession();
    const again = await open(gateway.port as number, session);
    again.client.msg(1, 'a2', 't');
    await again.client.waitFor((f) => f.op === 'ack' && f.seq === 1);
    expect(ran).toEqual([1, 1]);
    again.client.terminate();
  }, 40_000);
});
