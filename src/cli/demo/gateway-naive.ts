// The gateway users write first, on raw `ws`, speaking the same frames so the same client works
// against it: each node keeps its own dedup window and its own stream counters in memory, and
// nothing in a store. What seed 001 says goes wrong with it: a client that moves to another node
// (or whose node died) meets an empty window there, so its re-sent messages run again, and the
// messages published while it had no connection are gone; the node still answers
// `recovered: true`, as it has no way to know better.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import {
  type ClientFrame,
  encodeServerFrame,
  type JsonValue,
  parseClientFrame,
  type ServerAckFrame,
  type ServerFrame,
} from '../../ws/frames.js';
import { WS_SUBPROTOCOL } from '../../ws/limits.js';

/** The naive handler: the user and the message body, as the onceflow handler gets them. */
export type NaiveHandler = (user: string, body: JsonValue) => Promise<void>;

// One epoch for every node: the naive gateway numbers each user's messages per node and takes a
// client's offset as its own, as if the nodes shared one stream.
const EPOCH = 'naive';
// The window a node keeps per session: the protocol's maxInFlight, what a client can re-send.
const WINDOW = 64;
const LIMITS = { maxFrameBytes: 65_536, maxInFlight: WINDOW, heartbeatMs: 15_000, sessionTtlMs: 600_000 };

interface NaiveSession {
  lastSeq: number;
  /** The last WINDOW outcomes of the session on this node, by id (insertion order is age). */
  readonly window: Map<string, ServerAckFrame>;
}

/** A naive node: one HTTP server and its WebSocket server, all state in this object. */
export class NaiveNode {
  readonly #server: Server;
  readonly #wss: WebSocketServer;
  readonly #handler: NaiveHandler;
  readonly #sessions = new Map<string, NaiveSession>();
  /** The last offset this node gave each user's messages. */
  readonly #counters = new Map<string, number>();
  readonly #users = new Map<string, Set<WebSocket>>();
  readonly #sockets = new Set<WebSocket>();

  private constructor(server: Server, handler: NaiveHandler) {
    this.#server = server;
    this.#handler = handler;
    this.#wss = new WebSocketServer({
      server,
      handleProtocols: (protocols) => (protocols.has(WS_SUBPROTOCOL) ? WS_SUBPROTOCOL : false),
    });
    this.#wss.on('connection', (ws) => this.#accept(ws));
  }

  /** Starts a node on `port` of 127.0.0.1 (0: a free one). */
  static async start(port: number, handler: NaiveHandler): Promise<NaiveNode> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new NaiveNode(server, handler);
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** A message for `user`: pushed to the user's sockets on this node, if any; else it is gone. */
  push(user: string, type: string, body: JsonValue): void {
    const sockets = this.#users.get(user);
    if (sockets === undefined || sockets.size === 0) return;
    const offset = (this.#counters.get(user) ?? 0) + 1;
    this.#counters.set(user, offset);
    for (const ws of sockets) send(ws, { op: 'msg', offset, epoch: EPOCH, type, body });
  }

  /** Destroys every socket at once and stops listening: a crash, as the clients see it. */
  async abort(): Promise<void> {
    for (const ws of this.#sockets) ws.terminate();
    this.#wss.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(ws: WebSocket): void {
    this.#sockets.add(ws);
    let user: string | undefined;
    let session: NaiveSession | undefined;
    // One message at a time per connection, in arrival order: the usual fix for a handler that
    // must see a client's messages in order (but only within one connection).
    let chain: Promise<void> = Promise.resolve();
    ws.on('error', () => {});
    ws.on('close', () => {
      this.#sockets.delete(ws);
      if (user !== undefined) this.#users.get(user)?.delete(ws);
    });
    ws.on('message', (data, isBinary) => {
      const parsed = isBinary ? undefined : parseClientFrame(data as Buffer);
      if (parsed === undefined || !parsed.ok) {
        ws.close(1008, 'BAD_FRAME');
        return;
      }
      const frame: ClientFrame = parsed.frame;
      if (frame.op === 'hello') {
        user = frame.token ?? 'anonymous';
        session = this.#sessions.get(frame.session);
        if (session === undefined) {
          session = { lastSeq: 0, window: new Map() };
          this.#sessions.set(frame.session, session);
        }
        // The client's offset taken as this node's, so nothing looks missing: `recovered: true`.
        const offset = Math.max(this.#counters.get(user) ?? 0, frame.resume?.offset ?? 0);
        this.#counters.set(user, offset);
        const sockets = this.#users.get(user) ?? new Set<WebSocket>();
        this.#users.set(user, sockets.add(ws));
        send(ws, {
          op: 'welcome',
          v: 1,
          user,
          session: frame.session,
          continued: true,
          seq: session.lastSeq,
          epoch: EPOCH,
          offset,
          recovered: true,
          limits: LIMITS,
        });
      } else if (frame.op === 'msg' && session !== undefined && user !== undefined) {
        const s = session;
        const who = user;
        chain = chain.then(() => this.#handle(ws, s, who, frame.id, frame.seq, frame.body));
      } else if (frame.op === 'ping') send(ws, { op: 'pong' });
    });
  }

  async #handle(ws: WebSocket, s: NaiveSession, user: string, id: string, seq: number, body: JsonValue) {
    const known = s.window.get(id);
    if (known !== undefined) {
      send(ws, { ...known, duplicate: true });
      return;
    }
    await this.#handler(user, body);
    const ack: ServerAckFrame = { op: 'ack', seq, id, outcome: 'handled' };
    s.window.set(id, ack);
    if (s.window.size > WINDOW) s.window.delete(s.window.keys().next().value as string);
    s.lastSeq = Math.max(s.lastSeq, seq);
    send(ws, ack);
  }
}

function send(ws: WebSocket, frame: ServerFrame): void {
  // OPEN: a frame for a socket that closed meanwhile is dropped, as `ws` would.
  if (ws.readyState === 1) ws.send(encodeServerFrame(frame));
}
