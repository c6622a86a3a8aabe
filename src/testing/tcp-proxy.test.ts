import { connect, createServer, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startTcpProxy } from './tcp-proxy.js';

// An echo server: what the proxy passes one way comes back the other.
const sockets = new Set<Socket>();
const echo = createServer((s) => {
  sockets.add(s);
  s.on('data', (d) => s.write(d));
  s.on('close', () => sockets.delete(s));
  s.on('error', () => {});
});
const echoPort = await new Promise<number>((resolve) =>
  echo.listen(0, '127.0.0.1', () => resolve((echo.address() as { port: number }).port)),
);
afterAll(() => new Promise((r) => echo.close(r)));

function roundTrip(port: number, text: string): Promise<{ ms: number; reply: string } | 'closed'> {
  return new Promise((resolve) => {
    const started = Date.now();
    const s = connect(port, '127.0.0.1', () => s.write(text));
    s.once('data', (d) => {
      s.destroy();
      resolve({ ms: Date.now() - started, reply: d.toString() });
    });
    s.once('close', () => resolve('closed'));
    s.once('error', () => {});
  });
}

describe('startTcpProxy', () => {
  it('passes bytes both ways, late by the latency each way, in order', async () => {
    const proxy = await startTcpProxy(echoPort);
    try {
      expect(await roundTrip(proxy.port, 'a')).toMatchObject({ reply: 'a' });
      proxy.latency(40);
      const slow = await roundTrip(proxy.port, 'b');
      expect(slow).toMatchObject({ reply: 'b' });
      expect((slow as { ms: number }).ms).toBeGreaterThanOrEqual(75);
      proxy.latency(0);
      expect(() => proxy.latency(-1)).toThrow(/`ms`/);
    } finally {
      await proxy.close();
    }
  });

  it('cut() kills the open connections and refuses new ones until restore()', async () => {
    const proxy = await startTcpProxy(echoPort);
    try {
      const open = connect(proxy.port, '127.0.0.1');
      await new Promise((r) => open.once('connect', r));
      open.write('x');
      await new Promise((r) => open.once('data', r));
      const closed = new Promise((r) => open.once('close', r));
      open.on('error', () => {});
      proxy.cut();
      await closed;
      expect(await roundTrip(proxy.port, 'y')).toBe('closed');
      expect(proxy.killed).toBe(2);
      proxy.restore();
      expect(await roundTrip(proxy.port, 'z')).toMatchObject({ reply: 'z' });
    } finally {
      await proxy.close();
    }
  });

  it('partition() drops every byte both ways on open and new connections, closing none, until restore()', async () => {
    const proxy = await startTcpProxy(echoPort);
    try {
      const open = connect(proxy.port, '127.0.0.1');
      open.on('error', () => {});
      await new Promise((r) => open.once('connect', r));
      const received: string[] = [];
      open.on('data', (d) => received.push(d.toString()));
      let closed = false;
      open.once('close', () => {
        closed = true;
      });
      proxy.partition();
      open.write('lost');
      // Silence, not an error: nothing comes back and the connection stays open.
      await new Promise((r) => setTimeout(r, 200));
      expect([received, closed, proxy.killed]).toEqual([[], false, 0]);
      proxy.restore();
      open.write('after');
      await new Promise((r) => open.once('data', r));
      // What was sent in the partition never arrives, after it either.
      expect(received.join('')).toBe('after');
      open.destroy();
    } finally {
      await proxy.close();
    }
  });

  it('listens within ONCEFLOW_TEST_PORTS', async () => {
    const before = process.env['ONCEFLOW_TEST_PORTS'];
    process.env['ONCEFLOW_TEST_PORTS'] = '23100-23199';
    try {
      const proxy = await startTcpProxy(echoPort);
      expect(proxy.port).toBeGreaterThanOrEqual(23100);
      expect(proxy.port).toBeLessThanOrEqual(23199);
      await proxy.close();
    } finally {
      if (before === undefined) delete process.env['ONCEFLOW_TEST_PORTS'];
      else process.env['ONCEFLOW_TEST_PORTS'] = before;
    }
  });
});
