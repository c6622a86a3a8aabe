// The WebSocket client against a stand-in for the gateway (a few lines of `ws` speaking the
// protocol, so this runs on its own): a message sent and acked, a connection dropped with an ack
// lost, the re-send answered `duplicate` with the handler run once, and the server's messages
// resumed from the last one processed, each once. Run: npm run build && node examples/ws-client.mjs
import assert from 'node:assert/strict';
import { encodeServerFrame, parseClientFrame, WS_SUBPROTOCOL } from 'onceflow/ws';
import { createClient } from 'onceflow/ws/client';
import WebSocket, { WebSocketServer } from 'ws';

// --- the stand-in server: one session, one stream, outcomes kept per seq -----------------------
const stream = []; // the user's messages; offset = index + 1
const outcomes = new Map(); // seq -> ack frame
const handled = []; // what the handler ran for, once per id
let live;
let loseNextAck = true;
const wss = new WebSocketServer({
  port: 0,
  handleProtocols: (p) => (p.has(WS_SUBPROTOCOL) ? WS_SUBPROTOCOL : false),
});
await new Promise((resolve) => wss.once('listening', resolve));
const send = (ws, frame) => ws.send(encodeServerFrame(frame));
wss.on('connection', (ws) => {
  ws.on('message', (data) => {
    const parsed = parseClientFrame(data.toString());
    assert.ok(parsed.ok, parsed.message);
    const f = parsed.frame;
    if (f.op === 'hello') {
      live = ws;
      const from = f.resume?.epoch === 'e1' ? f.resume.offset : stream.length;
      const limits = { maxFrameBytes: 65536, maxInFlight: 64, heartbeatMs: 25000, sessionTtlMs: 600000 };
      const seq = Math.max(0, ...outcomes.keys());
      const welcome = { v: 1, user: 'u-1', session: f.session, continued: seq > 0, seq, epoch: 'e1' };
      send(ws, { op: 'welcome', ...welcome, offset: from, recovered: f.resume !== undefined, limits });
      for (let o = from + 1; o <= stream.length; o++)
        send(ws, { op: 'msg', offset: o, epoch: 'e1', ...stream[o - 1] });
    } else if (f.op === 'msg') {
      const done = outcomes.get(f.seq);
      if (done) return send(ws, { ...done, duplicate: true });
      handled.push(f.id);
      const ack = { op: 'ack', seq: f.seq, id: f.id, outcome: 'handled' };
      outcomes.set(f.seq, ack);
      if (loseNextAck) {
        loseNextAck = false;
        return ws.terminate(); // the handler ran, its ack is lost with the connection
      }
      send(ws, ack);
    } else if (f.op === 'ping') send(ws, { op: 'pong' });
  });
});
function publish(type, body) {
  stream.push({ type, body });
  send(live, { op: 'msg', offset: stream.length, epoch: 'e1', type, body });
}

// --- the client --------------------------------------------------------------------------------
const client = createClient({
  url: `ws://127.0.0.1:${wss.address().port}`,
  WebSocket, // Node 20 has no global WebSocket; a browser needs no option
  reconnect: { minMs: 10, maxMs: 100 },
});
const seen = [];
client.on('message', (m) => seen.push(m.offset));
client.on('state', (s) => console.log('state:', s));
client.on('error', (e) => console.log('error event:', e.code, e.closeCode ?? ''));

const result = await client.send('order.place', { sku: 'A1' }, { id: 'order-881' });
console.log('send ->', result);
assert.deepEqual(result, { id: 'order-881', seq: 1, outcome: 'handled', duplicate: true });
assert.deepEqual(handled, ['order-881']); // re-sent after the reconnect, run once

publish('chat.message', { text: 'one' });
publish('chat.message', { text: 'two' });
while (seen.length < 2) await new Promise((r) => setTimeout(r, 10));
live.terminate(); // drop again: the client resumes from offset 2
while (client.state !== 'open') await new Promise((r) => setTimeout(r, 10));
publish('chat.message', { text: 'three' });
while (seen.length < 3) await new Promise((r) => setTimeout(r, 10));
console.log('offsets delivered:', seen, 'position:', client.position);
assert.deepEqual(seen, [1, 2, 3]);

await client.close();
wss.close();
