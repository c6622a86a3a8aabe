// What an idle connection costs a gateway node: 10,000 WebSockets, each past its handshake
// (hello answered by welcome), held by one node process on the memory store, measured after full
// GCs against the same node before they came. Plain `ws` sockets on this side: an idle client
// only answers pings, and a full client per socket would measure this process, not the node.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { GatewayProcess } from '../support/ws-cluster.js';

const CONNECTIONS = 10_000;
// Opened this many at a time: under the listen backlog (511 by default), so no SYN waits on a
// full queue, and enough to keep both cores busy.
const BATCH = 250;
/**
 * The bound asserted per idle connection, heap plus external (Buffers) of the node: a `ws`
 * socket with its parser and net.Socket (~5-7 KiB), the Connection with its send policy and
 * heartbeat entry, the session's state in the memory store (~1 KiB). 16 KiB x 10,000 is 160 MiB:
 * a node of the default maxConnections fits a 512 MiB container with room for its handlers.
 */
const BOUND_BYTES_PER_CONNECTION = 16 * 1024;
/**
 * RSS adds the kernel-side and allocator memory the heap does not show (socket buffers are the
 * kernel's, not the process's); twice the heap bound leaves room for a heap the GC grew in steps
 * and does not give back.
 */
const RSS_BOUND_BYTES_PER_CONNECTION = 32 * 1024;

describe('ws gateway: 10,000 idle connections on one node', () => {
  let node: GatewayProcess;
  const sockets: WebSocket[] = [];

  beforeAll(async () => {
    node = await GatewayProcess.start({ maxConnections: CONNECTIONS + 100 }, ['--expose-gc']);
  }, 60_000);

  afterAll(async () => {
    for (const s of sockets) s.terminate();
    await node?.stop();
  }, 60_000);

  it('welcomes every one and holds each under 16 KiB of heap and external memory', async () => {
    const started = performance.now();
    const before = await node.memory();
    const url = `ws://127.0.0.1:${node.port}/`;
    let welcomed = 0;
    const refused: string[] = [];
    const open = (i: number) =>
      new Promise<void>((resolve) => {
        const ws = new WebSocket(url, ['onceflow.v1']);
        sockets.push(ws);
        ws.on('open', () => {
          const session = randomBytes(16).toString('base64url');
          ws.send(JSON.stringify({ op: 'hello', v: 1, session, token: `user:idle-${i}` }));
        });
        ws.on('message', (data) => {
          const frame = JSON.parse(String(data)) as { op: string; code?: string };
          if (frame.op === 'welcome') {
            welcomed++;
            resolve();
          } else if (frame.op === 'ping') ws.send('{"op":"pong"}');
          else if (frame.op === 'error') refused.push(frame.code ?? '?');
        });
        ws.on('error', (err) => {
          refused.push(err.message);
          resolve();
        });
        ws.on('close', () => resolve());
      });
    for (let i = 0; i < CONNECTIONS; i += BATCH)
      await Promise.all(Array.from({ length: Math.min(BATCH, CONNECTIONS - i) }, (_, j) => open(i + j)));
    const connectMs = performance.now() - started;
    expect(refused.slice(0, 5)).toEqual([]);
    expect(welcomed).toBe(CONNECTIONS);

    const after = await node.memory();
    expect(after.connections).toBe(CONNECTIONS);
    const per = (field: 'heapUsed' | 'external' | 'rss') => (after[field] - before[field]) / CONNECTIONS;
    const heapAndExternal = per('heapUsed') + per('external');
    const figures = {
      connections: CONNECTIONS,
      connectMs: Math.round(connectMs),
      heapPerConnection: Math.round(per('heapUsed')),
      externalPerConnection: Math.round(per('external')),
      heapAndExternalPerConnection: Math.round(heapAndExternal),
      rssPerConnection: Math.round(per('rss')),
      rssTotalMiB: Math.round(after.rss / 2 ** 20),
      boundBytes: BOUND_BYTES_PER_CONNECTION,
      rssBoundBytes: RSS_BOUND_BYTES_PER_CONNECTION,
    };
    console.log(`ws-idle-connections: ${JSON.stringify(figures)}`);
    expect(heapAndExternal).toBeLessThan(BOUND_BYTES_PER_CONNECTION);
    expect(per('rss')).toBeLessThan(RSS_BOUND_BYTES_PER_CONNECTION);
    // Every socket still open after the measurement: none was dropped as silent meanwhile.
    expect(sockets.filter((s) => s.readyState !== WebSocket.OPEN).length).toBe(0);
  }, 120_000);
});
