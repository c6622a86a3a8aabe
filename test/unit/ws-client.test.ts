// The client against a protocol server (test/support/ws-fake-server.ts, on the real `ws`):
// messages sent and acked, re-sent after a reconnect, server messages once and in order across
// reconnects, resume and recovery, unknown outcomes, the in-flight bound, ping, close().
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  type Client,
  type ClientOptions,
  createClient,
  type ServerMessage,
} from '../../src/ws/client/index.js';
import { FakeServer, type FakeServerOptions, until } from '../support/ws-fake-server.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function setup(
  serverOptions: FakeServerOptions = {},
  clientOptions: Partial<ClientOptions> = {},
): Promise<{ server: FakeServer; client: Client; messages: ServerMessage[] }> {
  const server = await FakeServer.start(serverOptions);
  cleanup.push(() => server.close());
  const client = createClient({
    url: server.url,
    WebSocket,
    reconnect: { minMs: 5, maxMs: 20 },
    ...clientOptions,
  });
  cleanup.push(() => client.close());
  const messages: ServerMessage[] = [];
  client.on('message', (m) => messages.push(m));
  return { server, client, messages };
}

describe('onceflow/ws/client: sending', () => {
  it('says hello first (v 1, its session, no resume), over onceflow.v1, and resolves send() with the ack', async () => {
    const { server, client } = await setup();
    const result = await client.send('chat.send', { text: 'hi' }, { id: 'm-1' });
    expect(result).toEqual({ id: 'm-1', seq: 1, outcome: 'handled' });
    const conn = await server.welcomed(0);
    expect(conn.protocol).toBe('onceflow.v1');
    expect(conn.frames[0]).toEqual({ op: 'hello', v: 1, session: client.session });
    expect(client.session).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(client.state).toBe('open');
    expect(client.recovered).toBe(false);
    const second = await client.send('chat.send', { text: 'again' });
    expect(second.seq).toBe(2);
    expect(second.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it('passes limited and rejected outcomes with their code, and sends the token', async () => {
    const { client, server } = await setup(
      {
        outcome: (f) =>
          f.type === 'slow'
            ? { outcome: 'limited', code: 'RATE_LIMITED', retryAfterMs: 850 }
            : f.type === 'nope'
              ? { outcome: 'rejected', code: 'UNKNOWN_TYPE' }
              : { outcome: 'handled' },
      },
      { token: async () => 'tok-1' },
    );
    expect(await client.send('slow', 1)).toMatchObject({
      outcome: 'limited',
      code: 'RATE_LIMITED',
      retryAfterMs: 850,
    });
    expect(await client.send('nope', null)).toMatchObject({ outcome: 'rejected', code: 'UNKNOWN_TYPE' });
    expect((await server.welcomed(0)).hello?.token).toBe('tok-1');
  });

  it('refuses an id the session used lately (the server would close on it): a retry is a new message', async () => {
    const { client, server } = await setup({
      outcome: () => ({ outcome: 'limited', code: 'RATE_LIMITED', retryAfterMs: 10 }),
    });
    expect(await client.send('order.place', { n: 1 }, { id: 'order-881' })).toMatchObject({
      outcome: 'limited',
    });
    await expect(client.send('order.place', { n: 1 }, { id: 'order-881' })).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
    expect(await client.send('order.place', { n: 1 }, { id: 'order-881-2' })).toMatchObject({
      outcome: 'limited',
    });
    expect(client.state).toBe('open');
    expect(server.connections.length).toBe(1);
  });

  it('refuses at send() what the server would refuse, queueing nothing', async () => {
    const { client, server } = await setup();
    await expect(client.send('9bad', {})).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    await expect(client.send('ok', JSON.parse('{"a":{"__proto__":1}}'))).rejects.toThrow(/FORBIDDEN_KEY/);
    await expect(client.send('ok', 'x'.repeat(70_000))).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
    await expect(client.send('ok', {}, { id: 'bad id' })).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
    await expect(client.send('ok', {}, { idd: 'x' } as never)).rejects.toThrow(/did you mean `id`/);
    await expect(client.send('ok', {})).resolves.toMatchObject({ seq: 1 });
    expect((await server.welcomed(0)).msgs()).toHaveLength(1);
  });

  it('re-sends an unacked message unchanged after a reconnect; the duplicate ack resolves it, the handler ran once', async () => {
    let server: FakeServer | undefined;
    let dropped = false;
    const setupResult = await setup({
      outcome: () => {
        if (!dropped) {
          dropped = true;
          server?.connections[0]?.terminate(); // the handler ran; its ack is lost with the connection
        }
        return { outcome: 'handled' };
      },
    });
    server = setupResult.server;
    const { client } = setupResult;
    const result = await client.send('order.place', { sku: 'A1' }, { id: 'order-881' });
    expect(result).toEqual({ id: 'order-881', seq: 1, outcome: 'handled', duplicate: true });
    expect(server.handled.map((f) => f.id)).toEqual(['order-881']);
    const second = await server.welcomed(1);
    expect(second.welcome?.continued).toBe(true);
    expect(second.msgs()).toEqual(server.connections[0]?.msgs());
  });

  it('never has more than maxInFlight unacked, clamped to the welcome', async () => {
    const { client, server } = await setup({ maxInFlight: 3 });
    server.autoAck = false;
    const sends = Array.from({ length: 10 }, (_, i) => client.send('t', i));
    const conn = await server.welcomed(0);
    await until(() => conn.msgs().length === 3, '3 messages in flight');
    await new Promise((r) => setTimeout(r, 100));
    expect(conn.msgs()).toHaveLength(3);
    expect(client.pending).toEqual({ inFlight: 3, queued: 7 });
    server.autoAck = true;
    server.release();
    const results = await Promise.all(sends);
    expect(results.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(server.handled.map((f) => f.body)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(conn.closed).toBeUndefined(); // the server never saw TOO_MANY_IN_FLIGHT
  });

  it('reports messages of unknown fate when the session expired, rejects them, and numbers from 1 again', async () => {
    const { client, server } = await setup();
    const unknown: unknown[] = [];
    client.on('unknown', (msgs) => unknown.push(...msgs.map((m) => m.id)));
    const conn = await server.welcomed(0);
    server.autoAck = false;
    const a = client.send('t', 'a', { id: 'a' });
    const b = client.send('t', 'b', { id: 'b' });
    await until(() => conn.msgs().length === 2, 'two messages');
    server.held.splice(0);
    server.autoAck = true;
    server.expireSession(client.session);
    conn.terminate();
    await expect(a).rejects.toMatchObject({
      name: 'WsClientError',
      code: 'UNKNOWN_OUTCOME',
      outcome: 'unknown',
    });
    await expect(b).rejects.toMatchObject({ code: 'UNKNOWN_OUTCOME' });
    expect(unknown).toEqual(['a', 'b']);
    expect(await client.send('t', 'c')).toMatchObject({ seq: 1, outcome: 'handled' });
  });

  it('rejects a send beyond maxQueued with QUEUE_FULL', async () => {
    const client = createClient({ url: 'ws://127.0.0.1:9', WebSocket, maxQueued: 2, reconnect: false });
    client.on('error', () => {});
    const first = client.send('t', 1).catch((e) => e);
    const second = client.send('t', 2).catch((e) => e);
    await expect(client.send('t', 3)).rejects.toMatchObject({ code: 'QUEUE_FULL', outcome: 'not-sent' });
    await client.close();
    expect(await first).toMatchObject({ code: 'CLOSED', outcome: 'not-sent' });
    expect(await second).toMatchObject({ code: 'CLOSED' });
  });
});

describe('onceflow/ws/client: server messages', () => {
  it('delivers each offset once, in order, across re-deliveries and reconnects, and acks in batches', async () => {
    const { client, server, messages } = await setup();
    const conn = await server.welcomed(0);
    for (let i = 1; i <= 50; i++) server.publish('chat.message', { i });
    await until(() => messages.length === 50, '50 messages');
    server.deliver(conn, 49); // a repeat is dropped
    await until(() => conn.frames.some((f) => f.op === 'ack' && f.offset === 50), 'the ack of 50');
    expect(conn.count('ack')).toBeLessThan(50);
    expect(client.position).toEqual({ offset: 50, epoch: 'ep1' });
    // The server resumes from further back than the client processed: the repeats are dropped.
    server.nextWelcome = { offset: 45, recovered: true };
    conn.terminate();
    const second = await server.welcomed(1);
    expect(second.hello?.resume).toEqual({ offset: 50, epoch: 'ep1' });
    server.publish('chat.message', { i: 51 });
    await until(() => messages.length === 51, 'message 51');
    expect(messages.map((m) => m.offset)).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
    expect(messages[50]).toEqual({ offset: 51, epoch: 'ep1', type: 'chat.message', body: { i: 51 } });
  });

  it('sends the resume option in hello and continues from it when recovered', async () => {
    const server = await FakeServer.start();
    cleanup.push(() => server.close());
    for (let i = 1; i <= 5; i++) server.publish('n', i);
    const client = createClient({ url: server.url, WebSocket, resume: { offset: 3, epoch: 'ep1' } });
    cleanup.push(() => client.close());
    const got: number[] = [];
    client.on('message', (m) => got.push(m.offset));
    const conn = await server.welcomed(0);
    expect(conn.hello?.resume).toEqual({ offset: 3, epoch: 'ep1' });
    await until(() => got.length === 2, 'two messages');
    expect(got).toEqual([4, 5]);
    expect(client.recovered).toBe(true);
  });

  it('recovered false: takes the welcome position, nothing of the missed range', async () => {
    const server = await FakeServer.start();
    cleanup.push(() => server.close());
    server.publish('n', 1);
    server.publish('n', 2);
    const client = createClient({ url: server.url, WebSocket, resume: { offset: 7, epoch: 'gone' } });
    cleanup.push(() => client.close());
    const welcomes: boolean[] = [];
    client.on('welcome', (w) => welcomes.push(w.recovered));
    const got: number[] = [];
    client.on('message', (m) => got.push(m.offset));
    await server.welcomed(0);
    await until(() => welcomes.length === 1, 'welcome');
    expect(welcomes).toEqual([false]);
    expect(client.recovered).toBe(false);
    expect(client.position).toEqual({ offset: 2, epoch: 'ep1' });
    server.publish('n', 3);
    await until(() => got.length === 1, 'message 3');
    expect(got).toEqual([3]);
  });

  it('answers ping with pong', async () => {
    const { server } = await setup();
    const conn = await server.welcomed(0);
    conn.send({ op: 'ping' });
    await until(() => conn.count('pong') === 1, 'a pong');
  });

  it('close(): close 1000, pending sends reject CLOSED, no reconnect', async () => {
    const { client, server } = await setup();
    const conn = await server.welcomed(0);
    server.autoAck = false;
    const pending = client.send('t', 1).catch((e: unknown) => e);
    await until(() => conn.msgs().length === 1, 'the message');
    const states: string[] = [];
    client.on('state', (s) => states.push(s));
    await client.close();
    expect(await pending).toMatchObject({ code: 'CLOSED', outcome: 'unknown' });
    await until(() => conn.closed, 'the server sees the close');
    expect(conn.closed?.code).toBe(1000);
    expect(states).toEqual(['closed']);
    await expect(client.send('t', 2)).rejects.toMatchObject({ code: 'CLOSED' });
    await new Promise((r) => setTimeout(r, 100));
    expect(server.connections).toHaveLength(1);
  });
});
