// The client against the real gateway (createGateway, memory store), through a TCP proxy that
// cuts the connection: a message handled once, server messages resumed after the cut with none
// missed and none repeated, and the gateway's drain (DRAINING, close 1001) seen as such.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { startTcpProxy } from '../../src/testing/tcp-proxy.js';
import { createClient, type WsClientError } from '../../src/ws/client/index.js';
import { createGateway } from '../../src/ws/gateway.js';
import { until } from '../support/ws-fake-server.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

describe('onceflow/ws/client against createGateway', () => {
  it('sends once, resumes the stream after a cut, and sees the drain', async () => {
    const handled: string[] = [];
    const gateway = await createGateway({
      port: 0,
      store: memoryStore(),
      handlers: {
        'chat.send': async (m) => {
          handled.push(m.id);
          await gateway.publish(m.user, 'chat.echo', m.body);
        },
      },
    });
    let gatewayClosed = false;
    cleanup.push(() => (gatewayClosed ? Promise.resolve() : gateway.close({ drain: 0 })));
    const proxy = await startTcpProxy(gateway.port as number);
    cleanup.push(() => proxy.close());

    const client = createClient({
      url: `ws://127.0.0.1:${proxy.port}`,
      WebSocket,
      reconnect: { minMs: 10, maxMs: 100 },
    });
    cleanup.push(() => client.close());
    const got: { offset: number; type: string }[] = [];
    const errors: WsClientError[] = [];
    client.on('message', (m) => got.push({ offset: m.offset, type: m.type }));
    client.on('error', (e) => errors.push(e));

    expect(await client.send('chat.send', { text: 'hi' }, { id: 'c-1' })).toEqual({
      id: 'c-1',
      seq: 1,
      outcome: 'handled',
    });
    expect(await client.send('no.such', {})).toMatchObject({ outcome: 'rejected', code: 'UNKNOWN_TYPE' });
    await until(() => got.length === 1, 'the echo');
    for (let i = 0; i < 3; i++) await gateway.publish('anonymous', 'note', { i });
    await until(() => got.length === 4, 'four messages');

    proxy.cut();
    await until(() => client.state === 'reconnecting', 'the client notices the cut');
    for (let i = 3; i < 5; i++) await gateway.publish('anonymous', 'note', { i });
    const queued = client.send('chat.send', { text: 'while cut' }, { id: 'c-2' });
    proxy.restore();
    expect(await queued).toMatchObject({ id: 'c-2', outcome: 'handled' });
    await until(() => got.length === 7, 'seven messages');
    expect(client.recovered).toBe(true);
    expect(got.map((m) => m.offset)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(got.map((m) => m.type)).toEqual([
      'chat.echo',
      'note',
      'note',
      'note',
      'note',
      'note',
      'chat.echo',
    ]);
    expect(handled).toEqual(['c-1', 'c-2']);

    gatewayClosed = true;
    await gateway.close({ drain: '1s' });
    await until(() => errors.some((e) => e.code === 'DRAINING'), 'the DRAINING error');
    const draining = errors.find((e) => e.code === 'DRAINING');
    expect(draining?.closeCode).toBe(1001);
    expect(client.state).not.toBe('closed'); // it keeps trying, for another node
  });
});
