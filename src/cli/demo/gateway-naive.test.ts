import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { encodeClientFrame, type JsonValue, parseServerFrame, type ServerFrame } from '../../ws/frames.js';
import { WS_SUBPROTOCOL } from '../../ws/limits.js';
import { NaiveNode } from './gateway-naive.js';

const nodes: NaiveNode[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await Promise.all(nodes.splice(0).map((n) => n.abort()));
});

const SESSION = 'naive-test-session-01';

/** A raw connection to `node` that collects the server's frames. */
async function connect(node: NaiveNode) {
  const ws = new WebSocket(`ws://127.0.0.1:${node.port}/`, [WS_SUBPROTOCOL]);
  sockets.push(ws);
  const frames: ServerFrame[] = [];
  ws.on('message', (data) => {
    const parsed = parseServerFrame(String(data));
    if (parsed.ok) frames.push(parsed.frame);
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const next = async (count: number) => {
    await expect.poll(() => frames.length, { timeout: 5_000 }).toBeGreaterThanOrEqual(count);
    return frames.slice(0, count);
  };
  return { ws, frames, next };
}

async function started(handled: JsonValue[]) {
  const node = await NaiveNode.start(0, async (_user, body) => {
    handled.push(body);
  });
  nodes.push(node);
  return node;
}

describe('the naive gateway node', () => {
  it('claims every session continued and every resume recovered, and dedups within its own window', async () => {
    const handled: JsonValue[] = [];
    const node = await started(handled);
    const c = await connect(node);
    c.ws.send(
      encodeClientFrame({
        op: 'hello',
        v: 1,
        session: SESSION,
        token: 'c1',
        resume: { offset: 7, epoch: 'naive' },
      }),
    );
    const msg = encodeClientFrame({ op: 'msg', id: 'm1', seq: 1, type: 'note', body: { n: 1 } });
    c.ws.send(msg);
    c.ws.send(msg);
    const [welcome, ack, again] = await c.next(3);
    expect(welcome).toMatchObject({
      op: 'welcome',
      continued: true,
      recovered: true,
      offset: 7,
      epoch: 'naive',
    });
    expect(ack).toEqual({ op: 'ack', seq: 1, id: 'm1', outcome: 'handled' });
    expect(again).toEqual({ op: 'ack', seq: 1, id: 'm1', outcome: 'handled', duplicate: true });
    expect(handled).toEqual([{ n: 1 }]);
  });

  it('another node has an empty window: a re-sent message runs again there', async () => {
    const handled: JsonValue[] = [];
    const [a, b] = [await started(handled), await started(handled)];
    for (const node of [a, b]) {
      const c = await connect(node);
      c.ws.send(encodeClientFrame({ op: 'hello', v: 1, session: SESSION, token: 'c1' }));
      c.ws.send(encodeClientFrame({ op: 'msg', id: 'm1', seq: 1, type: 'note', body: { n: 1 } }));
      const [, ack] = await c.next(2);
      expect(ack).toEqual({ op: 'ack', seq: 1, id: 'm1', outcome: 'handled' });
    }
    expect(handled).toEqual([{ n: 1 }, { n: 1 }]);
  });

  it('pushes only to users connected to it, numbering from their own offset; the rest is gone', async () => {
    const node = await started([]);
    node.push('c1', 'tick', { n: 1 }); // nobody connected: dropped
    const c = await connect(node);
    c.ws.send(
      encodeClientFrame({
        op: 'hello',
        v: 1,
        session: SESSION,
        token: 'c1',
        resume: { offset: 4, epoch: 'naive' },
      }),
    );
    await c.next(1);
    node.push('c1', 'tick', { n: 2 });
    node.push('c2', 'tick', { n: 3 });
    const [, msg] = await c.next(2);
    expect(msg).toEqual({ op: 'msg', offset: 5, epoch: 'naive', type: 'tick', body: { n: 2 } });
    expect(c.frames).toHaveLength(2);
  });
});
