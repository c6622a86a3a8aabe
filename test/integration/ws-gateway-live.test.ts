// Cross-node live delivery (docs/ws-protocol.md section 4): a message published from another
// process (another gateway node, or a publisher holding no connections) reaches the user's open
// connection at once, in order, without waiting for a reconnect or a publish on the holding node.
// Each node and publisher here has its own Redis client and store object, as separate processes
// would: they share only Redis. Needs the Redis live feed (src/ws/live-feed.ts).
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { createGateway, createPublisher, type Gateway } from '../../src/ws/index.js';
import { newSession, open, type RawClient, sleep } from '../support/ws-raw-client.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const prefix = runPrefix('ws-gateway-live');
const redisClients: Redis[] = [];
function redisStore(): Store {
  const client = new Redis(REDIS_URL);
  redisClients.push(client);
  return createRedisStore({ client, prefix });
}
afterAll(async () => {
  const raw = new Redis(REDIS_URL);
  await cleanupPrefix(raw, prefix);
  raw.disconnect();
  for (const c of redisClients) c.disconnect();
});

const gateways: Gateway[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  for (const g of gateways.splice(0)) await g.close({ drain: '200ms' });
});
const auth = (t: string | undefined) => t ?? null;
async function gateway(): Promise<Gateway> {
  const g = await createGateway({ port: 0, auth, store: redisStore() });
  gateways.push(g);
  return g;
}
/** Well past a pub/sub round trip on a loaded box, far under any reconnect or poll cadence. */
const LIVE_MS = 5_000;

describe('live delivery across nodes (Redis)', () => {
  it('a publish on another node or a publisher reaches the open connection, in order', async () => {
    const A = await gateway();
    const B = await gateway();
    const worker = createPublisher({ store: redisStore() });
    const user = `u-${newSession()}`;
    const { client } = await open(A.port as number, newSession(), { token: user });
    clients.push(client);
    await B.publish(user, 'x', { n: 1 });
    await client.waitFor((f) => f.op === 'msg' && f.offset === 1, { timeout: LIVE_MS });
    for (let n = 2; n <= 20; n++) await (n % 2 === 0 ? worker : B).publish(user, 'x', { n });
    await client.waitCount((f) => f.op === 'msg', 20, { timeout: LIVE_MS });
    await sleep(100);
    expect(client.msgs().map((f) => `${f.offset}:${f.body.n}`)).toEqual(
      Array.from({ length: 20 }, (_, i) => `${i + 1}:${i + 1}`),
    );
  });

  it('after a resume on another node, live messages from a third follow the caught-up ones', async () => {
    const A = await gateway();
    const B = await gateway();
    const worker = createPublisher({ store: redisStore() });
    const user = `u-${newSession()}`;
    const session = newSession();
    const a = await open(A.port as number, session, { token: user });
    clients.push(a.client);
    for (let n = 1; n <= 5; n++) await worker.publish(user, 'x', { n });
    await a.client.waitCount((f) => f.op === 'msg', 5, { timeout: LIVE_MS });
    a.client.send({ op: 'ack', offset: 3 });
    await sleep(200);
    a.client.terminate();
    const b = await open(B.port as number, session, { token: user });
    clients.push(b.client);
    expect(b.welcome).toMatchObject({ recovered: true, offset: 3 });
    await worker.publish(user, 'x', { n: 6 });
    await b.client.waitCount((f) => f.op === 'msg', 3, { timeout: LIVE_MS });
    await sleep(100);
    expect(b.client.msgs().map((f) => f.offset)).toEqual([4, 5, 6]);
  });
});
