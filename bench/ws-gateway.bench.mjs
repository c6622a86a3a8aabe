// The WebSocket gateway (createGateway from onceflow/ws) next to a raw `ws` server and next to
// Socket.IO on Redis, each in its own server process (bench/lib/ws-node.mjs) driven by one load
// process (bench/lib/ws-load.mjs): on 2 cores, one for the server under test, one for its clients.
//   round trips   CLIENTS clients each send MESSAGES `echo` messages, at most maxInFlight (64)
//                 unacked; the handler publishes the body back to the user's stream; the client
//                 checks each ack (in seq order) and each echo (in offset order) and acks the echoes.
//                 One op = one message handled and its echo delivered. The gateway decides each
//                 message once, in order, with a rate limit taken; the raw server answers the same
//                 frames with nothing behind them (the floor); Socket.IO emits with an ack and the
//                 server emits to the user's room (Redis streams adapter, connection state recovery).
//   idle memory   and   resume after a node kill: measured once in setup (ws-idle-resume.mjs),
//                 printed in the workload line.
// BENCH_WS_QUICK=1 shrinks every size, to check the suite end to end in seconds.
import { Redis } from 'ioredis';
import { unlinkPrefix } from './lib/redis.mjs';
import { idleMemory, resumeAfterKill } from './lib/ws-idle-resume.mjs';
import { ask, startLoad, startNode, stopLoad, stopNode } from './lib/ws-ipc.mjs';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUICK = process.env.BENCH_WS_QUICK === '1';
// 50 clients x 64 in flight = 3,200 messages the server holds at once: enough to keep its one
// core busy, and far under the node's connection caps.
const CLIENTS = QUICK ? 10 : 50;
// 400 per client: 20,000 round trips a run, about 1 s at the floor's rate (past timer and GC
// noise), so 2 comparisons x (1 + 3) x 2 runs stay within run.mjs's 10-minute budget.
const MESSAGES = QUICK ? 40 : 400;
// 2,000 idle connections: per-connection memory well above the process's own noise (~1 MB of
// rss drift), in seconds of handshakes.
const IDLE = QUICK ? 200 : 2_000;
// The resume scenario: 200 clients; each sends 4 messages, processes the first 2 echoes, and
// misses 8 more published while it was on the node that dies: 10 messages to catch up each.
const RESUME = { n: QUICK ? 20 : 200, sent: 4, processed: 2, extra: 8 };

const PREFIX = `bench-ws:${process.pid}:`;
let runs = 0;

function side(id, label, s, nodeKey, kind) {
  const run = async (count) => {
    const { cpuUs: before } = await ask(s.nodes[nodeKey].child, { type: 'cpu' });
    const reply = await ask(s.load, { type: 'run', count });
    const { cpuUs: after } = await ask(s.nodes[nodeKey].child, { type: 'cpu' });
    // The server's CPU and the clients': ops/CPU-s is what a round trip costs both ends.
    return { ops: reply.ops, cpuUs: reply.cpuUs + after - before };
  };
  const open = () =>
    ask(s.load, { type: 'open', kind, url: s.nodes[nodeKey].url, clients: CLIENTS, tag: `r${runs++}` });
  return {
    id,
    label,
    prepare: open,
    run: () => run(MESSAGES),
    dispose: () => ask(s.load, { type: 'close' }),
    async verify() {
      // The clients reject on any ack out of seq order, outcome but handled, echo out of offset
      // order or error frame: a pass that resolves did the checked work.
      await open();
      const r = await run(20);
      await ask(s.load, { type: 'close' });
      if (r.ops !== CLIENTS * 20) throw new Error(`${id}: ${r.ops} round trips, expected ${CLIENTS * 20}`);
    },
  };
}

const kib = (b) => `${(b / 1024).toFixed(1)} KiB`;

export default {
  name: 'ws-gateway',
  title:
    'WebSocket gateway round trips vs a raw ws server and Socket.IO on Redis; idle memory; resume after a kill',
  async setup() {
    const redis = new Redis(REDIS_URL);
    const s = { redis, nodes: {}, load: undefined, idle: undefined, resume: undefined };
    try {
      const gateway = await idleMemory('gateway', IDLE, 'idle-gw');
      const raw = await idleMemory('raw', IDLE, 'idle-raw');
      s.idle = { gateway, raw };
      s.resume = await resumeAfterKill({ ...RESUME, prefix: `${PREFIX}resume:` });
      s.nodes.gwMemory = await startNode({ kind: 'gateway', store: 'memory' });
      s.nodes.gwRedis = await startNode({ kind: 'gateway', store: 'redis', prefix: `${PREFIX}gw:` });
      s.nodes.raw = await startNode({ kind: 'raw' });
      s.nodes.socketio = await startNode({ kind: 'socketio', prefix: `${PREFIX}sio:` });
      s.load = startLoad();
    } catch (err) {
      await this.teardown(s);
      throw err;
    }
    return s;
  },
  async teardown(s) {
    if (s.load !== undefined) await stopLoad(s.load);
    for (const node of Object.values(s.nodes)) await stopNode(node);
    await unlinkPrefix(s.redis, PREFIX);
    s.redis.disconnect();
  },
  describe: (s) => {
    const { gateway: g, raw: r } = s.idle;
    const q = s.resume;
    return (
      `${CLIENTS} clients x ${MESSAGES} echo messages a run, 64 in flight each, ~100-byte bodies; ` +
      `server and clients in 2 processes (ops/CPU-s counts both). ` +
      `Idle memory per connection (${IDLE.toLocaleString('en')} connections, after GC): gateway ` +
      `rss ${kib(g.rss)}, heap+external ${kib(g.js)}; raw ws rss ${kib(r.rss)}, heap+external ${kib(r.js)}; ` +
      `ratio rss ${(g.rss / r.rss).toFixed(2)}x, heap+external ${(g.js / r.js).toFixed(2)}x (target <= 1.5x). ` +
      `Resume after SIGKILL of node A, ${q.n} clients to node B (Redis store), ${q.missed} missed messages each: ` +
      `p50 ${q.p50.toFixed(0)} ms, p99 ${q.p99.toFixed(0)} ms, all done ${q.total.toFixed(0)} ms after the kill`
    );
  },
  comparisons: (s) => [
    {
      name: 'gateway (memory store) vs raw ws',
      note: 'the same frames and client; the raw server keeps no state',
      target: 0.5,
      sides: [
        side(
          'gateway',
          'createGateway({ handlers: { echo: publish }, limits: [gcra per user] }) on memoryStore()',
          s,
          'gwMemory',
          'protocol',
        ),
        side('raw ws', 'new WebSocketServer(): JSON.parse, send an ack and an echo', s, 'raw', 'protocol'),
      ],
    },
    {
      name: 'gateway (Redis store) vs Socket.IO (Redis streams adapter)',
      note: 'both on the same Redis; Socket.IO has no dedup, no ordering and no limit',
      target: 2,
      sides: [
        side(
          'gateway',
          'createGateway({ store: createRedisStore(...), handlers: { echo: publish }, limits: [gcra per user] })',
          s,
          'gwRedis',
          'protocol',
        ),
        side(
          'socket.io',
          'new Server({ adapter: createAdapter(redis), connectionStateRecovery }): emit with ack, io.to(user).emit',
          s,
          'socketio',
          'socketio',
        ),
      ],
    },
  ],
};
