// A gateway judges heartbeats by its own monotonic clock, never the wall clock: here the node's
// wall clock (Date.now and new Date, the whole process's) jumps forwards and back by seconds
// every 100 ms while clients that answer pings stay connected for several heartbeat timeouts;
// no connection is dropped, and a really silent client still is, within the stated bound.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createClient } from '../../src/ws/client/index.js';
import { createGateway, type GatewayEvent } from '../../src/ws/index.js';

const realNow = Date.now;
afterEach(() => {
  Date.now = realNow;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('heartbeats and the wall clock', () => {
  it('a wall clock skewed by seconds, back and forth, drops no healthy client; a silent one goes', async () => {
    const events: GatewayEvent[] = [];
    const gateway = await createGateway({ port: 0, heartbeat: '1s', observer: (e) => events.push(e) });
    const url = `ws://127.0.0.1:${gateway.port}/`;
    const clients = Array.from({ length: 3 }, () => createClient({ url, WebSocket, reconnect: false }));
    try {
      await Promise.all(clients.map((c) => new Promise((r) => c.on('welcome', r))));
      // A raw client that says hello and then never answers anything (ws answers protocol-level
      // pings by itself; the gateway's pings are frames a client must answer, and this one does not).
      const silent = new WebSocket(url, 'onceflow.v1');
      const silentClosed = new Promise<number>((resolve) => silent.on('close', (code) => resolve(code)));
      await new Promise((r) => silent.on('open', r));
      silent.send(JSON.stringify({ op: 'hello', v: 1, session: 'silent-session-0001' }));
      const helloAt = performance.now();
      // Skewed: the wall clock jumps by up to +-10 s every 100 ms, for 5 s (5 heartbeats).
      const skew = setInterval(() => {
        const offset = Math.round((Math.random() * 2 - 1) * 10_000);
        Date.now = () => realNow() + offset;
      }, 100);
      let code: number;
      try {
        await sleep(5_000);
        code = await silentClosed;
      } finally {
        clearInterval(skew);
        Date.now = realNow;
      }
      const silentFor = performance.now() - helloAt;
      // Dropped after 2 heartbeats of silence, found by the next sweep: 2 s + 1 s, plus this
      // loaded machine's timer lateness; never before 2 s.
      expect(code).toBe(1013);
      expect(silentFor).toBeGreaterThanOrEqual(2_000);
      const drops = events.filter((e) => e.type === 'state' && e.state === 'closed');
      expect(drops.map((e) => (e as { code?: string }).code)).toEqual(['HEARTBEAT_TIMEOUT']);
      for (const c of clients) expect(c.state).toBe('open');
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await gateway.close();
    }
  }, 30_000);
});
