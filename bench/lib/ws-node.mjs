// One server process of the ws-gateway suite, started with `fork` (and --expose-gc) so that what
// it costs (CPU, memory) is its own and the load generator never shares its event loop. Kinds:
//   gateway   createGateway on the memory store or a Redis store (`prefix`), echo handler
//             publishing back to the user's stream, one rate limit (GCRA, per user);
//   raw       a bare `ws` server answering the same frames with no state behind them: a `welcome`
//             to `hello`, and to each `msg` an `ack` and an echo `msg` with the next offset;
//   socketio  Socket.IO with the Redis streams adapter and connection state recovery, the echo
//             emitted to the user's room.
// Messages: { type: 'start', kind, store?, prefix? } -> { port }; { type: 'cpu' } -> { cpuUs }
// (since start); { type: 'memory' } -> process.memoryUsage() after full GCs; { type: 'close' }.
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { WebSocketServer } from 'ws';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let cpu0 = process.cpuUsage();
let closeServer = async () => {};

async function startGateway({ store: kind, prefix }) {
  const { createGateway } = await import('../../dist/ws/index.js');
  let store;
  let client;
  if (kind === 'redis') {
    const { createRedisStore } = await import('../../dist/redis/index.js');
    // Both Redis sides get ioredis's auto-pipelining (a turn's commands in one write), as
    // docs/ws.md recommends for a gateway node: without it each command is its own syscall.
    client = new Redis(REDIS_URL, { enableAutoPipelining: true });
    store = createRedisStore({ client, prefix });
  }
  const gw = await createGateway({
    port: 0,
    ...(store === undefined ? {} : { store }),
    auth: (token) => token ?? null,
    handlers: { echo: (m) => gw.publish(m.user, 'echo', m.body) },
    // On, and never the answer: the figures are of the limiter's cost, not of refusals.
    limits: [{ by: 'user', algorithm: 'gcra', limit: 1e6, window: '1s' }],
  });
  closeServer = async () => {
    await gw.close({ drain: '1s' });
    client?.disconnect();
  };
  return gw.port;
}

async function startRaw() {
  const wss = new WebSocketServer({
    port: 0,
    host: '127.0.0.1',
    clientTracking: false,
    handleProtocols: (protocols) => (protocols.has('onceflow.v1') ? 'onceflow.v1' : false),
  });
  await new Promise((resolve) => wss.once('listening', resolve));
  wss.on('connection', (ws) => {
    let offset = 0;
    ws.on('message', (data) => {
      const f = JSON.parse(data);
      if (f.op === 'msg') {
        ws.send(JSON.stringify({ op: 'ack', seq: f.seq, id: f.id, outcome: 'handled' }));
        ws.send(JSON.stringify({ op: 'msg', offset: ++offset, epoch: 'e', type: f.type, body: f.body }));
      } else if (f.op === 'ack') {
        if (f.offset > offset) ws.close(1008, 'BAD_ACK');
      } else if (f.op === 'hello') {
        const limits = { maxFrameBytes: 65536, maxInFlight: 64, heartbeatMs: 15000, sessionTtlMs: 600000 };
        ws.send(
          JSON.stringify({
            op: 'welcome',
            v: 1,
            user: f.token,
            session: f.session,
            continued: false,
            seq: 0,
            epoch: 'e',
            offset: 0,
            recovered: false,
            limits,
          }),
        );
      }
    });
    ws.on('error', () => {});
  });
  closeServer = () => new Promise((resolve) => wss.close(resolve));
  return wss.address().port;
}

async function startSocketIo({ prefix }) {
  const { Server } = await import('socket.io');
  const { createAdapter } = await import('@socket.io/redis-streams-adapter');
  const client = new Redis(REDIS_URL, { enableAutoPipelining: true });
  const http = createServer();
  const io = new Server(http, {
    transports: ['websocket'],
    adapter: createAdapter(client, {
      streamName: `${prefix}sio`,
      channelPrefix: `${prefix}sio`,
      sessionKeyPrefix: `${prefix}sio:session:`,
    }),
    connectionStateRecovery: { maxDisconnectionDuration: 2 * 60_000 },
  });
  io.on('connection', (socket) => {
    const user = socket.handshake.auth.token;
    socket.join(user);
    socket.on('echo', (body, ack) => {
      io.to(user).emit('echo', body);
      ack({ outcome: 'handled' });
    });
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  closeServer = async () => {
    await new Promise((resolve) => io.close(() => resolve()));
    client.disconnect();
  };
  return http.address().port;
}

async function handle(msg) {
  switch (msg.type) {
    case 'start': {
      const start = { gateway: startGateway, raw: startRaw, socketio: startSocketIo }[msg.kind];
      const port = await start(msg);
      cpu0 = process.cpuUsage();
      return { port };
    }
    case 'cpu': {
      const c = process.cpuUsage(cpu0);
      return { cpuUs: c.user + c.system };
    }
    case 'memory':
      // Twice: the first full GC runs finalizers whose garbage the second collects.
      globalThis.gc();
      globalThis.gc();
      return { memory: process.memoryUsage() };
    case 'close':
      await closeServer();
      return {};
    default:
      throw new Error(`unknown message ${msg.type}`);
  }
}

process.on('message', (msg) => {
  handle(msg).then(
    (reply) => {
      process.send({ type: 'done', ...reply });
      if (msg.type === 'close') process.disconnect();
    },
    (err) => process.send({ type: 'error', message: err?.stack ?? String(err) }),
  );
});
