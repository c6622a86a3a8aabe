import { describe, expect, it } from 'vitest';
import { createPublisher } from '../../src/ws/index.js';
import { gatewayEnv, tokenAuth } from '../support/ws-gateway-env.js';
import { newSession, open, sleep } from '../support/ws-raw-client.js';

const env = gatewayEnv('ws-gateway-live', tokenAuth);
const { redisStore, clients } = env;
const gateway = () => env.gateway({ store: redisStore() });
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
