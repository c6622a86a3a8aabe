// A protocol server for the client's tests (docs/ws-protocol.md), on the real `ws` package: it
// keeps sessions (seq, outcomes, acked offset) and one user stream, answers as the protocol says,
// and lets a test break it on purpose: drop or end a connection, re-deliver a message, hold
// acks, expire a session, start a new epoch, force a welcome's fields.
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  type ClientFrame,
  type ClientMsgFrame,
  encodeServerFrame,
  type HelloFrame,
  parseClientFrame,
  type Resume,
  type ServerAckFrame,
  type ServerFrame,
  type WelcomeFrame,
  WS_CODES,
  WS_SUBPROTOCOL,
  type WsErrorCode,
} from '../../src/ws/index.js';

export type Outcome = Omit<ServerAckFrame, 'op' | 'seq' | 'id' | 'duplicate'>;

export interface FakeServerOptions {
  readonly heartbeatMs?: number;
  readonly maxInFlight?: number;
  readonly maxFrameBytes?: number;
  /** The outcome of each new message; default handled. */
  readonly outcome?: (frame: ClientMsgFrame) => Outcome;
  /** Whether to answer a client ping (default true). */
  readonly pong?: boolean;
}

interface SessionState {
  seq: number;
  readonly outcomes: Map<number, ServerAckFrame>;
  readonly waiting: Map<number, ClientMsgFrame>;
  acked: Resume | undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 5 ms until it returns a value other than undefined, or fails after `ms`. */
export async function until<T>(check: () => T | undefined, what: string, ms = 10_000): Promise<T> {
  const end = performance.now() + ms;
  for (;;) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

export class FakeConnection {
  readonly frames: ClientFrame[] = [];
  hello: HelloFrame | undefined;
  welcome: WelcomeFrame | undefined;
  /** The close the server saw (code and reason), once closed. */
  closed: { code: number; reason: string } | undefined;
  sentOffset = 0;
  readonly #ws: WebSocket;
  constructor(ws: WebSocket) {
    this.#ws = ws;
  }
  get protocol(): string {
    return this.#ws.protocol;
  }
  send(frame: ServerFrame): void {
    this.#ws.send(encodeServerFrame(frame));
  }
  sendRaw(text: string | Buffer): void {
    this.#ws.send(text);
  }
  /** An `error` frame, then the close its code's table row says. */
  error(code: WsErrorCode, message: string, extra: { resume?: Resume; retryAfterMs?: number } = {}): void {
    this.send({ op: 'error', code, message, ...extra });
    this.#ws.close(WS_CODES[code].close, code);
  }
  close(code: number, reason = ''): void {
    this.#ws.close(code, reason);
  }
  /** Drops the TCP connection without a closing handshake. */
  terminate(): void {
    this.#ws.terminate();
  }
  msgs(): ClientMsgFrame[] {
    return this.frames.filter((f): f is ClientMsgFrame => f.op === 'msg');
  }
  count(op: ClientFrame['op']): number {
    return this.frames.filter((f) => f.op === op).length;
  }
}

export class FakeServer {
  readonly connections: FakeConnection[] = [];
  /** Every message a handler ran for, once per (session, id): what exactly-once is judged by. */
  readonly handled: ClientMsgFrame[] = [];
  readonly sessions = new Map<string, SessionState>();
  epoch = 'ep1';
  stream: { type: string; body: unknown }[] = [];
  /** Fields forced into the next welcome (then cleared). */
  nextWelcome: Partial<WelcomeFrame> | undefined;
  /** While false, new messages wait in `held` (no outcome, no ack) until {@link release}. */
  autoAck = true;
  readonly held: { conn: FakeConnection; frame: ClientMsgFrame }[] = [];
  readonly #wss: WebSocketServer;
  readonly #opts: FakeServerOptions;
  readonly #live = new Map<string, FakeConnection>();

  private constructor(wss: WebSocketServer, opts: FakeServerOptions) {
    this.#wss = wss;
    this.#opts = opts;
    wss.on('connection', (ws) => this.#accept(ws));
  }

  static async start(opts: FakeServerOptions = {}): Promise<FakeServer> {
    const wss = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      handleProtocols: (protocols) => (protocols.has(WS_SUBPROTOCOL) ? WS_SUBPROTOCOL : false),
    });
    await new Promise<void>((resolve, reject) => {
      wss.once('listening', resolve);
      wss.once('error', reject);
    });
    return new FakeServer(wss, opts);
  }

  get url(): string {
    return `ws://127.0.0.1:${(this.#wss.address() as AddressInfo).port}`;
  }

  /** The `n`th connection (0-based) once it has been welcomed. */
  welcomed(n: number): Promise<FakeConnection> {
    return until(() => {
      const c = this.connections[n];
      return c?.welcome ? c : undefined;
    }, `connection ${n} welcomed`);
  }

  publish(type: string, body: unknown): number {
    this.stream.push({ type, body });
    for (const conn of this.#live.values()) this.deliver(conn, this.stream.length);
    return this.stream.length;
  }

  /** Sends the stream's message at `offset` on `conn` (again, when it was sent already). */
  deliver(conn: FakeConnection, offset: number): void {
    const m = this.stream[offset - 1];
    if (!m || conn.closed) return;
    conn.send({ op: 'msg', offset, epoch: this.epoch, type: m.type, body: m.body as never });
    conn.sentOffset = Math.max(conn.sentOffset, offset);
  }

  expireSession(session: string): void {
    this.sessions.delete(session);
  }

  /** The store lost the stream: a new epoch, empty. */
  newEpoch(epoch: string): void {
    this.epoch = epoch;
    this.stream = [];
  }

  release(): void {
    for (const { conn, frame } of this.held.splice(0)) this.#onMsg(conn, frame, true);
  }

  async close(): Promise<void> {
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  #accept(ws: WebSocket): void {
    const conn = new FakeConnection(ws);
    this.connections.push(conn);
    ws.on('close', (code, reason) => {
      conn.closed = { code, reason: reason.toString() };
      if (conn.hello && this.#live.get(conn.hello.session) === conn) this.#live.delete(conn.hello.session);
    });
    ws.on('message', (data, isBinary) => {
      const parsed = parseClientFrame(isBinary ? new Uint8Array() : data.toString());
      if (!parsed.ok) {
        conn.error(parsed.code, parsed.message);
        return;
      }
      const frame = parsed.frame;
      conn.frames.push(frame);
      if (!conn.hello) {
        if (frame.op !== 'hello') {
          conn.error('UNEXPECTED_FRAME', 'hello first');
          return;
        }
        if (ws.protocol !== WS_SUBPROTOCOL) {
          conn.error('BAD_VERSION', 'no subprotocol');
          return;
        }
        this.#onHello(conn, frame);
        return;
      }
      if (frame.op === 'hello') {
        conn.error('UNEXPECTED_FRAME', 'a second hello');
        return;
      }
      if (frame.op === 'ping') {
        if (this.#opts.pong !== false) conn.send({ op: 'pong' });
      } else if (frame.op === 'ack') {
        if (frame.offset > conn.sentOffset)
          return conn.error('BAD_ACK', `offset ${frame.offset} was never sent`);
        this.#session(conn).acked = { offset: frame.offset, epoch: this.epoch };
      } else if (frame.op === 'msg') this.#onMsg(conn, frame, false);
    });
  }

  #session(conn: FakeConnection): SessionState {
    return this.sessions.get((conn.hello as HelloFrame).session) as SessionState;
  }

  #onHello(conn: FakeConnection, hello: HelloFrame): void {
    conn.hello = hello;
    const previous = this.#live.get(hello.session);
    if (previous && !previous.closed)
      previous.error('SESSION_REPLACED', 'a newer connection took this session');
    this.#live.set(hello.session, conn);
    let state = this.sessions.get(hello.session);
    const continued = state !== undefined;
    if (!state) {
      state = { seq: 0, outcomes: new Map(), waiting: new Map(), acked: undefined };
      this.sessions.set(hello.session, state);
    }
    const from = hello.resume ?? state.acked;
    const end = this.stream.length;
    const recovered = from !== undefined && from.epoch === this.epoch && from.offset <= end;
    const welcome: WelcomeFrame = {
      op: 'welcome',
      v: 1,
      user: 'u-1',
      session: hello.session,
      continued,
      seq: state.seq,
      epoch: this.epoch,
      offset: recovered ? from.offset : end,
      recovered,
      limits: {
        maxFrameBytes: this.#opts.maxFrameBytes ?? 65_536,
        maxInFlight: this.#opts.maxInFlight ?? 64,
        heartbeatMs: this.#opts.heartbeatMs ?? 25_000,
        sessionTtlMs: 600_000,
      },
      ...this.nextWelcome,
    };
    this.nextWelcome = undefined;
    conn.welcome = welcome;
    conn.sentOffset = welcome.offset;
    conn.send(welcome);
    for (let o = welcome.offset + 1; o <= end; o++) this.deliver(conn, o);
  }

  #onMsg(conn: FakeConnection, frame: ClientMsgFrame, released: boolean): void {
    const state = this.#session(conn);
    if (frame.seq <= state.seq) {
      const ack = state.outcomes.get(frame.seq);
      if (!ack || ack.id !== frame.id) {
        conn.error('BAD_SEQ', `seq ${frame.seq} has another id`);
        return;
      }
      conn.send({ ...ack, duplicate: true });
      return;
    }
    const limit = this.#opts.maxInFlight ?? 64;
    if (frame.seq - state.seq > limit) {
      conn.error('TOO_MANY_IN_FLIGHT', `seq ${frame.seq}`);
      return;
    }
    if (!this.autoAck && !released) {
      this.held.push({ conn, frame });
      return;
    }
    state.waiting.set(frame.seq, frame);
    for (let next = state.waiting.get(state.seq + 1); next; next = state.waiting.get(state.seq + 1)) {
      state.waiting.delete(next.seq);
      const outcome = this.#opts.outcome?.(next) ?? { outcome: 'handled' as const };
      if (outcome.outcome === 'handled') this.handled.push(next);
      const ack = { op: 'ack', seq: next.seq, id: next.id, ...outcome } as ServerAckFrame;
      state.seq = next.seq;
      state.outcomes.set(next.seq, ack);
      state.outcomes.delete(next.seq - limit);
      if (!conn.closed) conn.send(ack);
    }
  }
}
