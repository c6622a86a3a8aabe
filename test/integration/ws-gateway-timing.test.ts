// Heartbeats (docs/ws-protocol.md section 5) and slow readers (SLOW_CONSUMER, section 8) through
// the gateway: a silent client is closed; one that answers pings survives the node's own stall; a
// client that stops reading is closed with its send buffer bounded, and resumes without a gap.
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { memoryStore } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { createGateway, type Gateway, type GatewayEvent, type GatewayOptions } from '../../src/ws/index.js';
import { connectRaw, newSession, open, type RawClient, sleep } from '../support/ws-raw-client.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const prefix = runPrefix('ws-gateway-timing');
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

const gateways: Gateway[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  for (const g of gateways.splice(0)) await g.close({ drain: '200ms' });
});
async function gateway(options: Omit<GatewayOptions, 'port'>): Promise<Gateway> {
  const g = await createGateway({ port: 0, ...options });
  gateways.push(g);
  return g;
}

describe('heartbeat', () => {
  it('a silent client is closed with HEARTBEAT_TIMEOUT (1013), after a handshake or without one', async () => {
    const events: GatewayEvent[] = [];
    const g = await gateway({ heartbeat: '1s', observer: (e) => events.push(e) });
    const { client } = await open(g.port as number, newSession());
    client.answerPings = false;
    const bare = await connectRaw(g.port as number); // never says hello
    bare.answerPings = false;
    clients.push(client, bare);
    const t0 = performance.now();
    const [a, b] = await Promise.all([client.failure(10_000), bare.failure(10_000)]);
    const took = performance.now() - t0;
    expect(a.error?.code).toBe('HEARTBEAT_TIMEOUT');
    expect(a.close).toEqual({ code: 1013, reason: 'HEARTBEAT_TIMEOUT' });
    expect(b.close.code).toBe(1013);
    // 2 x heartbeat of silence, plus up to a sweep interval; generous for a loaded box.
    expect(took).toBeGreaterThanOrEqual(1_500);
    expect(took).toBeLessThan(8_000);
    expect(client.frames.some((f) => f.op === 'ping')).toBe(true);
    // Each drop is told as a heartbeat verdict, just before its close.
    const closed = events.flatMap((e, i) =>
      e.type === 'state' && e.state === 'closed' && e.code === 'HEARTBEAT_TIMEOUT' ? [[e.connection, i]] : [],
    );
    expect(closed).toHaveLength(2);
    for (const [connection, at] of closed as Array<[number, number]>) {
      const verdict = events.findIndex(
        (e) => e.type === 'heartbeat' && e.connection === connection && e.verdict === 'dropped',
      );
      expect(verdict).toBeGreaterThanOrEqual(0);
      expect(verdict).toBeLessThan(at);
    }
  });

  it('a client that answers pings stays open past 5 s, across a 2 s stall of the node (told as spared)', async () => {
    const events: GatewayEvent[] = [];
    const g = await gateway({ heartbeat: '1s', observer: (e) => events.push(e) });
    const { client } = await open(g.port as number, newSession());
    clients.push(client);
    await sleep(1_500);
    const until = performance.now() + 2_000;
    while (performance.now() < until) {
      // The node's event loop (this process) stalls: nothing is read, nothing is answered.
    }
    await sleep(3_000);
    expect(client.closeInfo).toBeUndefined();
    expect(client.frames.filter((f) => f.op === 'ping').length).toBeGreaterThanOrEqual(2);
    // It still answers: a client ping gets a pong.
    const from = client.frames.length;
    client.send({ op: 'ping' });
    await client.waitFor((f) => f.op === 'pong', { from });
    // Its first frame after the stall came over 2 s (the timeout) after the one before on the
    // monotonic clock: a false timeout suppressed, the stall discounted (the meter counts it short
    // by at most its 50 ms resolution).
    const spared = events.filter((e) => e.type === 'heartbeat' && e.verdict === 'spared');
    expect(spared).toHaveLength(1);
    expect(spared[0]).toMatchObject({ type: 'heartbeat', verdict: 'spared' });
    expect((spared[0] as { stalledMs: number }).stalledMs).toBeGreaterThanOrEqual(1_900);
    expect(events.some((e) => e.type === 'heartbeat' && e.verdict === 'dropped')).toBe(false);
  });
});

describe('session state of an open connection', () => {
  it('outlives sessionTtl while the connection stays open and silent (memory and Redis)', async () => {
    const run = async (store: Store) => {
      const ran: number[] = [];
      const g = await gateway({
        store,
        heartbeat: '1s',
        sessionTtl: '2s',
        handlers: { t: (m) => void ran.push(m.seq) },
      });
      const session = newSession();
      const { client } = await open(g.port as number, session);
      clients.push(client);
      client.msg(1, 'a', 't');
      await client.waitFor((f) => f.op === 'ack' && f.seq === 1);
      await sleep(5_000); // silent but for pongs: 2.5 x sessionTtl
      client.msg(2, 'b', 't');
      const ack = await client.waitFor((f) => (f.op === 'ack' && f.seq === 2) || f.op === 'error');
      expect(ack).toEqual({ op: 'ack', seq: 2, id: 'b', outcome: 'handled' });
      expect(ran).toEqual([1, 2]);
    };
    await Promise.all([run(memoryStore()), run(createRedisStore({ client: redis, prefix }))]);
  });
});

describe('slow reader', () => {
  it('SLOW_CONSUMER (1013) with a bounded send buffer; a resume then gets every message in order', async () => {
    const cap = 256 * 1024;
    const frameMax = 16 * 1024;
    // The largest bufferedAmount of any server socket right after a send.
    let maxBuffered = 0;
    const send = WebSocket.prototype.send;
    const patched = function (this: WebSocket, ...args: Parameters<WebSocket['send']>) {
      send.apply(this, args);
      if ((this as unknown as { _isServer: boolean })._isServer)
        maxBuffered = Math.max(maxBuffered, this.bufferedAmount);
    };
    WebSocket.prototype.send = patched as WebSocket['send'];
    try {
      const store = memoryStore();
      const events: { type: string; code?: string }[] = [];
      const g = await gateway({
        store,
        send: { highWater: 64 * 1024, cap, grace: '1s' },
        streams: { maxLength: 2_000 },
        observer: (e) => events.push(e),
      });
      const user = 'anonymous';
      const session = newSession();
      const { client, welcome } = await open(g.port as number, session);
      clients.push(client);
      (client.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      const body = { pad: 'x'.repeat(12 * 1024) };
      const N = 500; // ~6 MB: past what the loopback's kernel buffers absorb
      for (let n = 1; n <= N; n++) await g.publish(user, 'big', { n, ...body });
      await expect
        .poll(() => events.some((e) => e.type === 'state' && e.code === 'SLOW_CONSUMER'), { timeout: 10_000 })
        .toBe(true);
      expect(maxBuffered).toBeLessThanOrEqual(cap + frameMax);
      (client.ws as unknown as { _socket: { resume(): void } })._socket.resume();
      const { error, close } = await client.failure();
      expect(error?.code).toBe('SLOW_CONSUMER');
      expect(close).toEqual({ code: 1013, reason: 'SLOW_CONSUMER' });
      expect(error?.resume).toEqual({ offset: 0, epoch: welcome.epoch });
      const got = client.msgs();
      expect(got.length).toBeLessThan(N);
      // Resume from what it processed (it dropped nothing, so the last offset it read): no gap, no repeat.
      const last = got.at(-1)?.offset ?? 0;
      expect(got.map((f) => f.offset)).toEqual(Array.from({ length: got.length }, (_, i) => i + 1));
      const again = await open(g.port as number, session, { resume: { offset: last, epoch: welcome.epoch } });
      clients.push(again.client);
      expect(again.welcome).toMatchObject({ recovered: true, offset: last });
      const rest = await again.client.waitCount((f) => f.op === 'msg', N - last, { timeout: 20_000 });
      for (const [i, f] of rest.entries()) {
        if (f.offset !== last + 1 + i) throw new Error(`offset ${f.offset} at ${i}`);
        again.client.send({ op: 'ack', offset: f.offset });
      }
      expect(rest.at(-1)?.offset).toBe(N);
    } finally {
      WebSocket.prototype.send = send;
    }
  });
});
