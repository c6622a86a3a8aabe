// The clients of the ws-gateway suite. One protocol client (ProtocolClient) speaks
// docs/ws-protocol.md over `ws`, and drives both the gateway and the raw `ws` floor (which answers
// the same frames with no state behind them), so the two differ only on the server side. A
// Socket.IO client (SocketIoClient) does the same delivery with Socket.IO's own primitives.
import { randomBytes } from 'node:crypto';
import { io } from 'socket.io-client';
import WebSocket from 'ws';

/** A body of ~100 bytes of JSON: the size of a chat line or a game action. */
export const BODY = { room: 'lobby', text: 'the quick brown fox jumps over the lazy dog, twice', n: 0 };

/** A fresh session id: 96 random bits, 16 base64url characters (the protocol's minimum). */
export const newSession = () => randomBytes(12).toString('base64url');

/**
 * One onceflow.v1 connection. `ready` resolves with the welcome frame. `run(count)` sends
 * `count` echo messages with at most `maxInFlight` unacked and resolves once every one has its
 * `handled` ack (in seq order) and its echo arrived (in offset order, then acked). Any frame out of
 * order, any outcome but `handled`, any `error` frame rejects: the figures count only checked work.
 */
export class ProtocolClient {
  constructor(url, { user, session = newSession(), resume, processUpTo = Number.POSITIVE_INFINITY }) {
    this.user = user;
    this.session = session;
    this.processUpTo = processUpTo;
    this.welcome = undefined;
    this.last = 0; // the last stream offset processed
    this.epoch = '';
    this.seq = 0; // the last seq sent
    this.ackedSeq = 0;
    this.echoes = 0;
    this.ackScheduled = false;
    this.job = undefined;
    this.onMessage = undefined;
    this.closed = false;
    this.ws = new WebSocket(url, 'onceflow.v1', { perMessageDeflate: false });
    this.ready = new Promise((resolve, reject) => {
      this.readyHooks = { resolve, reject };
    });
    this.ws.on('open', () => {
      const hello = { op: 'hello', v: 1, session: this.session, token: user };
      if (resume !== undefined) hello.resume = resume;
      this.ws.send(JSON.stringify(hello));
    });
    this.ws.on('message', (data) => this.frame(JSON.parse(data)));
    this.ws.on('error', (err) => this.fail(err));
    this.ws.on('close', (code) => {
      this.closed = true;
      if (this.job !== undefined || this.welcome === undefined) this.fail(new Error(`closed (${code})`));
    });
  }

  frame(f) {
    switch (f.op) {
      case 'welcome':
        this.welcome = f;
        this.epoch = f.epoch;
        this.last = f.offset;
        this.seq = f.seq;
        this.ackedSeq = f.seq;
        this.readyHooks.resolve(f);
        return;
      case 'ack': {
        if (f.seq !== this.ackedSeq + 1 || f.outcome !== 'handled')
          return this.fail(new Error(`ack ${JSON.stringify(f)} after seq ${this.ackedSeq}`));
        this.ackedSeq = f.seq;
        this.sendMore();
        return this.check();
      }
      case 'msg': {
        if (f.offset <= this.last) return; // a repeat (the protocol lets a client drop it)
        // Past `processUpTo`: not processed (as if lost with a dying node), so never acked.
        if (f.offset > this.processUpTo) return;
        if (f.offset !== this.last + 1 || f.epoch !== this.epoch)
          return this.fail(new Error(`msg at ${f.offset}/${f.epoch} after ${this.last}/${this.epoch}`));
        this.last = f.offset;
        this.echoes++;
        this.onMessage?.(f);
        this.scheduleAck();
        return this.check();
      }
      case 'ping':
        return this.ws.send('{"op":"pong"}');
      case 'pong':
        return;
      default:
        return this.fail(new Error(`server frame ${JSON.stringify(f)}`));
    }
  }

  /** Cumulative acks, one per turn of the event loop (what a client does with a burst of frames). */
  scheduleAck() {
    if (this.ackScheduled) return;
    this.ackScheduled = true;
    setImmediate(() => {
      this.ackScheduled = false;
      if (!this.closed) this.ws.send(`{"op":"ack","offset":${this.last}}`);
    });
  }

  sendMore() {
    const job = this.job;
    if (job === undefined) return;
    const window = this.welcome.limits.maxInFlight;
    while (job.sent < job.count && this.seq - this.ackedSeq < window) {
      this.seq++;
      job.sent++;
      BODY.n = this.seq;
      this.ws.send(
        JSON.stringify({ op: 'msg', id: `m${this.seq}`, seq: this.seq, type: 'echo', body: BODY }),
      );
    }
  }

  check() {
    const job = this.job;
    if (job === undefined || this.ackedSeq < job.untilSeq || this.echoes < job.untilEchoes) return;
    this.job = undefined;
    job.resolve();
  }

  /** Sends `count` messages; resolves once all are acked and `echoes` (default `count`) echoes processed. */
  run(count, echoes = count) {
    return new Promise((resolve, reject) => {
      this.job = {
        count,
        sent: 0,
        untilSeq: this.seq + count,
        untilEchoes: this.echoes + echoes,
        resolve,
        reject,
      };
      this.sendMore();
    });
  }

  fail(err) {
    this.readyHooks.reject(err);
    const job = this.job;
    this.job = undefined;
    job?.reject(err);
    this.failure ??= err;
  }

  close() {
    this.closed = true;
    this.job = undefined;
    this.readyHooks.reject(new Error('closed'));
    this.ready.catch(() => {});
    this.ws.terminate();
  }
}

/**
 * The same delivery on Socket.IO: `emit('echo', body, ack)` with at most `window` acks pending;
 * the server emits the echo to the user's room. Resolves once every ack and every echo arrived.
 */
export class SocketIoClient {
  constructor(url, { user, window = 64 }) {
    this.user = user;
    this.window = window;
    this.pending = 0;
    this.acks = 0;
    this.echoes = 0;
    this.job = undefined;
    this.socket = io(url, { transports: ['websocket'], auth: { token: user }, reconnection: false });
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('connect_error', reject);
    });
    this.socket.on('echo', () => {
      this.echoes++;
      this.check();
    });
    this.socket.on('disconnect', (why) => this.job?.reject(new Error(`disconnected: ${why}`)));
  }

  sendMore() {
    const job = this.job;
    while (job !== undefined && job.sent < job.count && this.pending < this.window) {
      this.pending++;
      job.sent++;
      BODY.n = job.sent;
      this.socket.emit('echo', BODY, (answer) => {
        if (answer?.outcome !== 'handled') return job.reject(new Error(`ack ${JSON.stringify(answer)}`));
        this.pending--;
        this.acks++;
        this.sendMore();
        this.check();
      });
    }
  }

  check() {
    const job = this.job;
    if (job === undefined || this.acks < job.untilAcks || this.echoes < job.untilEchoes) return;
    this.job = undefined;
    job.resolve();
  }

  run(count) {
    return new Promise((resolve, reject) => {
      this.job = {
        count,
        sent: 0,
        untilAcks: this.acks + count,
        untilEchoes: this.echoes + count,
        resolve,
        reject,
      };
      this.sendMore();
    });
  }

  close() {
    this.job = undefined;
    this.socket.disconnect();
  }
}

/** Handshakes in flight while opening clients: well under the default listen backlog of 511. */
const OPEN_BATCH = 200;

/** Opens `n` clients of `kind` ('protocol' or 'socketio') at `url`, users `${tag}-u${i}`, all ready. */
export async function openClients(kind, url, n, tag) {
  const clients = [];
  try {
    // In batches of OPEN_BATCH: thousands of handshakes at once would overrun the listen backlog.
    for (let i = 0; i < n; i += OPEN_BATCH) {
      const batch = [];
      for (let j = i; j < Math.min(n, i + OPEN_BATCH); j++) {
        const user = `${tag}-u${j}`;
        batch.push(
          kind === 'socketio' ? new SocketIoClient(url, { user }) : new ProtocolClient(url, { user }),
        );
      }
      clients.push(...batch);
      await Promise.all(batch.map((c) => c.ready));
    }
  } catch (err) {
    for (const c of clients) c.close();
    throw err;
  }
  return clients;
}
