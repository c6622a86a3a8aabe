import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { WebSocket } from 'ws';
import { createSendPolicy, type SendPolicy } from './backpressure.js';
import { WS_CODES, type WsErrorCode } from './errors.js';
import type { ConnectionState } from './events.js';
import {
  type ClientFrame,
  type ClientMsgFrame,
  encodeServerFrame,
  type HelloFrame,
  parseClientFrame,
  type ServerFrame,
} from './frames.js';
import type { GatewayNode } from './gateway-node.js';
import { BodyRefusedError, messageKey } from './handlers.js';
import { InboundDriver, type InboundMessage, UndecidedError } from './inbound.js';
import { utf8Bytes } from './json-body.js';
import { WS_LIMITS, WS_SUBPROTOCOL } from './limits.js';
import type { OpenResult, Outcome, SessionRef } from './session-state.js';
import type { StreamMessage, StreamPosition } from './user-streams.js';

/**
 * Messages read from a user's stream per store call while catching up. 64 x ~500 B is ~32 KB a
 * page: a resume of the default 1000 retained messages takes 16 reads, and a page never holds
 * more than a quarter of the send buffer's default high watermark (1 MiB) even at 4 KiB a body.
 */
const PAGE = 64;

/**
 * How long a closed connection may take to finish its close handshake before its socket is
 * destroyed: the handshake takes one round trip (well under 1 s on any network a client stays
 * connected over); a peer that has not answered in 3 s is not reading, and holding its buffers
 * longer is what a slow client must not cost.
 */
const CLOSE_GRACE_MS = 3_000;

/**
 * How often a paused connection's send buffer is looked at again (waitForRoom). The buffer drains
 * from the high to the low watermark (768 KiB) in ~0.75 s at 1 MB/s: a look every 25 ms resumes
 * within ~3% of that, and costs a paused connection 40 timer runs a second, none for the others.
 */
const PAUSE_POLL_MS = 25;

/**
 * One WebSocket on this node, from upgrade to close. Every change of its state goes through
 * `transition`, the one place a metrics layer needs to watch (GatewayEvent `state`).
 *
 * Outbound: the connection keeps only `sent`, the last offset it wrote; messages stay in the
 * user's stream until the socket takes them, so a slow reader costs the node its send buffer
 * (bounded by the send policy) and nothing else. Inbound: an InboundDriver decides each message
 * once, in seq order, on the session's state in the store.
 */
export class Connection {
  readonly id: number;
  state: ConnectionState = 'handshake';
  user: string | undefined;
  ref: SessionRef | undefined;
  private readonly ws: WebSocket;
  /** The upgrade request, for `auth` at hello; dropped then (a connection lives for hours). */
  private request: IncomingMessage | undefined;
  private readonly ip: string;
  private readonly node: GatewayNode<Connection>;
  /** Made at the first frame of the stream sent (an idle connection holds none). */
  private sendPolicy: SendPolicy<number> | undefined;
  private opened: OpenResult | undefined;
  private driver: InboundDriver | undefined;
  /** `msg` frames received between `hello` and `welcome` (at most maxInFlight). */
  private early: InboundMessage[] | undefined;
  private helloSeen = false;
  private epoch = '';
  private sent = 0;
  private acked = 0;
  private pumping = false;
  private pumpAgain = false;
  private pauseTimer: NodeJS.Timeout | undefined;
  private persisting = false;
  private persistence: Promise<void> | undefined;
  private persisted = 0;
  private unwatch: (() => void) | undefined;
  private lastTouch = performance.now();
  private corked = false;

  constructor(
    id: number,
    ws: WebSocket,
    request: IncomingMessage,
    ip: string,
    node: GatewayNode<Connection>,
  ) {
    this.id = id;
    this.ws = ws;
    this.request = request;
    this.ip = ip;
    this.node = node;
    ws.on('message', (data, isBinary) => this.onFrame(data as Buffer, isBinary));
    ws.on('close', () => this.closed('CLIENT'));
    // A socket error is followed by `close`: nothing else to do, but it must have a listener.
    ws.on('error', () => {});
    node.heartbeat.touch(this);
    this.transition('handshake');
  }

  /** The resume position the client has acknowledged (for DRAINING and SLOW_CONSUMER). */
  get position(): StreamPosition | undefined {
    return this.epoch === '' ? undefined : { offset: this.acked, epoch: this.epoch };
  }

  /**
   * Resolves once every message taken so far has its outcome recorded (or the driver ended), and
   * the last ack received is written (a drained client that kept no position resumes from it).
   */
  async idle(): Promise<void> {
    await this.driver?.idle();
    await this.persistence;
  }

  private transition(state: ConnectionState, detail: Record<string, unknown> = {}): void {
    this.state = state;
    this.node.emit({
      part: 'gateway',
      type: 'state',
      connection: this.id,
      state,
      ...(this.user === undefined ? {} : { user: this.user }),
      ...(this.ref === undefined ? {} : { session: this.ref.session }),
      ...detail,
    });
  }

  /** A method, not a field read: TypeScript would keep a narrowing of `state` across an await. */
  private ended(): boolean {
    return this.state === 'closed';
  }

  private onFrame(data: Buffer, isBinary: boolean) {
    if (this.state === 'closed') return;
    this.node.heartbeat.touch(this);
    if (isBinary)
      return this.fail('BAD_ENCODING', 'binary frames are refused: send text frames of UTF-8 JSON');
    const parsed = parseClientFrame(data, { maxFrameBytes: this.node.o.maxFrameBytes });
    if (!parsed.ok) return this.fail(parsed.code, parsed.message);
    this.take(parsed.frame);
  }

  private take(frame: ClientFrame) {
    switch (frame.op) {
      case 'hello':
        if (this.helloSeen) return this.fail('UNEXPECTED_FRAME', 'a second hello on one connection');
        this.helloSeen = true;
        this.hello(frame).catch((err) => this.fail('INTERNAL', `handshake failed: ${errorText(err)}`));
        return;
      case 'ping':
        return this.send({ op: 'pong' });
      case 'pong':
        return;
      default:
        if (!this.helloSeen)
          return this.fail('UNEXPECTED_FRAME', `the first frame must be hello, got ${frame.op}`);
        if (frame.op === 'ack') return this.ack(frame.offset);
        return this.message(frame);
    }
  }

  private message(frame: ClientMsgFrame) {
    const m: InboundMessage = { id: frame.id, seq: frame.seq, type: frame.type, body: frame.body };
    if (this.state === 'open') return this.inbound().push(m);
    this.early ??= [];
    if (this.early.length >= this.node.o.maxInFlight)
      return this.fail('TOO_MANY_IN_FLIGHT', `more than ${this.node.o.maxInFlight} messages before welcome`);
    this.early.push(m);
  }

  private async hello(frame: HelloFrame): Promise<void> {
    if (this.ws.protocol !== WS_SUBPROTOCOL)
      return this.fail('BAD_VERSION', `connect with the subprotocol ${WS_SUBPROTOCOL}`);
    const request = this.request as IncomingMessage;
    this.request = undefined;
    const user = await this.node.auth(frame.token, request);
    if (this.ended()) return;
    if (user === null) return this.fail('AUTH_FAILED', 'the token was refused');
    if (typeof user !== 'string' || user.length === 0 || utf8Bytes(user) > WS_LIMITS.userBytes)
      return this.fail('INTERNAL', `auth answered no user of 1-${WS_LIMITS.userBytes} bytes`);
    this.user = user;
    this.ref = { user, session: frame.session };
    const refused = this.node.admit(this);
    if (refused !== undefined) return this.fail('TOO_MANY_CONNECTIONS', refused);
    const { sessions, streams, live } = this.node;
    const opened = await sessions.open(this.ref);
    if (this.ended()) return;
    this.opened = opened;
    let from: StreamPosition | undefined = frame.resume;
    if (from === undefined && opened.continued) {
      const kept = await streams.position(frame.session);
      if (kept !== undefined && kept.user === user) from = { offset: kept.offset, epoch: kept.epoch };
      // Closed meanwhile: a watch taken now would never be removed (`closed` already ran).
      if (this.ended()) return;
    }
    // Watched before the first read: a message published after the read wakes the pump, one
    // published before it is in the read. Nothing falls between catch-up and live.
    this.unwatch = live.watch(user, () => void this.pump());
    const first = await streams.read(user, from, PAGE);
    if (this.ended()) return;
    const recovered = first.recovered && from !== undefined;
    this.epoch = first.epoch;
    this.sent = recovered ? (from as StreamPosition).offset : first.end;
    this.acked = this.sent;
    this.persisted = this.sent;
    const o = this.node.o;
    this.send({
      op: 'welcome',
      v: 1,
      user,
      session: frame.session,
      continued: opened.continued,
      seq: opened.nextSeq - 1,
      epoch: first.epoch,
      offset: this.sent,
      recovered,
      limits: {
        maxFrameBytes: o.maxFrameBytes,
        maxInFlight: o.maxInFlight,
        heartbeatMs: o.heartbeatMs,
        sessionTtlMs: o.sessionTtlMs,
      },
    });
    this.transition('open', { continued: opened.continued, recovered });
    if (this.early !== undefined) for (const m of this.early) this.inbound().push(m);
    this.early = undefined;
    if (recovered) {
      for (const m of first.messages) if (!this.deliver(m)) return;
      if (first.messages.length === PAGE) void this.pump();
    }
    // A wake-up that came during the handshake found no epoch yet: look once more.
    void this.pump();
  }

  /**
   * A message's outcome: unknown type, then the limits, then the body check and the handler.
   * `again` (a node died, or a lease ran out, after an earlier run of it began): the limits are
   * not taken again. The first run may have been charged and its handler may have run, so a
   * refusal now could claim `limited` for an effect that happened; at most one message per such
   * death passes uncharged.
   */
  private async run(m: InboundMessage, again: boolean): Promise<Outcome> {
    const handler = this.node.o.handlers[m.type];
    if (handler === undefined) return { outcome: 'rejected', code: 'UNKNOWN_TYPE' };
    const user = this.user as string;
    const { limiter } = this.node;
    if (limiter !== undefined && !again) {
      let d: Awaited<ReturnType<typeof limiter.take>>;
      try {
        d = await limiter.take({ user, ip: this.ip, type: m.type, 'user-type': `${user}\n${m.type}` });
      } catch (err) {
        // The store that decides the limits failed: no outcome to record (INTERNAL, re-sent later).
        throw new UndecidedError(`deciding the limits failed: ${errorText(err)}`, { cause: err });
      }
      this.node.emit({ part: 'gateway', type: 'limit', connection: this.id, reason: d.reason });
      if (!d.allowed)
        return {
          outcome: 'limited',
          code: 'RATE_LIMITED',
          retryAfterMs: Math.max(0, Math.ceil(d.retryAfterMs)),
        };
    }
    const handle = typeof handler === 'function' ? handler : handler.handle;
    if (typeof handler !== 'function' && handler.validate !== undefined) {
      const verdict = handler.validate(m.body);
      if (verdict !== true) return { outcome: 'rejected', code: 'BODY_REFUSED' };
    }
    const session = (this.ref as SessionRef).session;
    try {
      await handle({ ...m, user, session, ip: this.ip, key: messageKey(user, session, m.id) });
    } catch (err) {
      if (err instanceof BodyRefusedError) return { outcome: 'rejected', code: 'BODY_REFUSED' };
      throw err;
    }
    return { outcome: 'handled' };
  }

  private ack(offset: number) {
    // Before welcome nothing was sent: a pipelining client's ack of its resume position is no news.
    if (this.epoch === '') return;
    if (offset > this.sent)
      return this.fail('BAD_ACK', `ack of offset ${offset}, past the last one sent (${this.sent})`);
    if (offset <= this.acked) return;
    this.acked = offset;
    this.sendPolicy?.acked(offset);
    // A write in progress takes the new offset on its next turn: its promise stays the one to wait for.
    if (!this.persisting) this.persistence = this.persist();
  }

  /** Writes the acked position to the store, one write at a time, always the latest. */
  private async persist(): Promise<void> {
    if (this.persisting) return;
    this.persisting = true;
    try {
      while (this.persisted < this.acked && this.ref !== undefined) {
        const offset = this.acked;
        await this.node.streams.ackPosition(this.ref.session, this.ref.user, { offset, epoch: this.epoch });
        this.persisted = offset;
      }
    } catch {
      // The store failed: the next ack writes again, and a resume from an older position only
      // sends the client messages it drops by offset.
    } finally {
      this.persisting = false;
    }
  }

  /** Sends what the user's stream holds after `sent`, a page at a time, while the socket takes it. */
  async pump(): Promise<void> {
    if (this.state !== 'open' || this.epoch === '') return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        for (;;) {
          if (this.state !== 'open' || this.sendPolicy?.paused === true) return;
          const page = await this.node.streams.read(
            this.user as string,
            { offset: this.sent, epoch: this.epoch },
            PAGE,
          );
          if (this.state !== 'open') return;
          if (!page.recovered)
            // The stream lost what this connection had not sent yet (retention outran it, or the
            // store lost the stream): the client resumes, and learns `recovered: false` there.
            return this.fail('SLOW_CONSUMER', 'the stream no longer holds the next message');
          for (const m of page.messages) if (!this.deliver(m)) return;
          if (page.messages.length < PAGE) break;
        }
      } while (this.pumpAgain);
    } catch (err) {
      this.fail('INTERNAL', `reading the stream failed: ${errorText(err)}`);
    } finally {
      this.pumping = false;
    }
  }

  /**
   * The message driver, made at the first client message (an idle connection holds none): one
   * decision at a time, in seq order, on the session's state in the store.
   */
  private inbound(): InboundDriver {
    this.driver ??= new InboundDriver({
      store: this.node.sessions,
      ref: this.ref as SessionRef,
      opened: this.opened as OpenResult,
      handler: (m, again) => this.run(m, again),
      send: (ack) => {
        this.node.emit({
          part: 'gateway',
          type: 'message',
          connection: this.id,
          outcome: ack.outcome,
          ...('code' in ack ? { code: ack.code } : {}),
          duplicate: ack.duplicate === true,
        });
        this.send(ack);
      },
      fail: (code, message) => this.fail(code, message),
    });
    return this.driver;
  }

  private policy(): SendPolicy<number> {
    if (this.sendPolicy === undefined) {
      this.sendPolicy = createSendPolicy<number>(this.node.sendOptions);
      this.sendPolicy.acked(this.acked);
    }
    return this.sendPolicy;
  }

  /** Writes one stream message if the send policy lets it; false when paused or closed. */
  private deliver(m: StreamMessage): boolean {
    if (m.offset <= this.sent) return true;
    const text = encodeServerFrame({
      op: 'msg',
      offset: m.offset,
      epoch: this.epoch,
      type: m.type,
      body: m.body,
    });
    const decision = this.policy().decide({
      bufferedAmount: this.ws.bufferedAmount,
      queuedBytes: 0,
      frameBytes: utf8Bytes(text),
      now: performance.now(),
    });
    if (decision.action === 'close') {
      this.fail('SLOW_CONSUMER', `the client read too slowly (${decision.reason})`);
      return false;
    }
    if (decision.action === 'queue') {
      this.waitForRoom();
      return false;
    }
    this.corkTurn();
    this.ws.send(text);
    this.sent = m.offset;
    return true;
  }

  /** Paused: looks at the send buffer until it drains to the low watermark (or grace runs out). */
  private waitForRoom(): void {
    if (this.pauseTimer !== undefined) return;
    this.pauseTimer = setInterval(() => {
      if (this.state !== 'open') return this.stopPauseTimer();
      const d = this.policy().decide({
        bufferedAmount: this.ws.bufferedAmount,
        queuedBytes: 0,
        frameBytes: 0,
        now: performance.now(),
      });
      if (d.action === 'close') return this.fail('SLOW_CONSUMER', `the client read too slowly (${d.reason})`);
      if (d.action === 'send') {
        this.stopPauseTimer();
        void this.pump();
      }
    }, PAUSE_POLL_MS);
    this.pauseTimer.unref();
  }

  private stopPauseTimer(): void {
    if (this.pauseTimer !== undefined) clearInterval(this.pauseTimer);
    this.pauseTimer = undefined;
  }

  /** The heartbeat's ping; and, every half session TTL, the session's TTL restarted in the store. */
  ping(): void {
    // Before `welcome` a client waits for the handshake's answer, not for pings; silence in the
    // handshake is still judged (the heartbeat drops a connection that never says hello).
    if (this.state !== 'open') return;
    this.send({ op: 'ping' });
    const now = performance.now();
    if (this.ref === undefined || this.opened === undefined) return;
    // Touched now when the next ping would come past half the TTL: a touch at most every half
    // TTL (heartbeat <= TTL / 2, gateway-options), so a late ping or a slow store cannot let the
    // state expire under an open connection.
    if (now - this.lastTouch + this.node.o.heartbeatMs < this.node.o.sessionTtlMs / 2) return;
    this.lastTouch = now;
    this.node.sessions.touch(this.ref, this.opened.token).then(
      (r) => {
        if (r.kind === 'replaced') this.fail('SESSION_REPLACED', 'a newer connection took this session');
      },
      () => {},
    );
  }

  private send(frame: ServerFrame): void {
    if (this.state === 'closed' || this.ws.readyState !== this.ws.OPEN) return;
    this.corkTurn();
    this.ws.send(encodeServerFrame(frame));
  }

  /**
   * Holds the socket's writes until the end of this turn of the event loop: the ack of a message
   * and the echoes its handler published leave in one write (one syscall) instead of one each,
   * which is most of a busy node's CPU otherwise. `ws` writes each frame between a cork and an
   * uncork of its own; an outer cork makes those nest, and `setImmediate` (after this turn's
   * microtasks, where the acks and pumps run) releases them together.
   */
  private corkTurn(): void {
    if (this.corked) return;
    const socket = (this.ws as unknown as { _socket?: Partial<Socket> })._socket;
    if (typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return;
    socket.cork();
    this.corked = true;
    setImmediate(() => {
      this.corked = false;
      socket.uncork?.();
    });
  }

  /** Ends the connection with an `error` frame of `code` and its close code. */
  fail(code: WsErrorCode, message: string): void {
    if (this.state === 'closed') return;
    const resume = code === 'DRAINING' || code === 'SLOW_CONSUMER' ? this.position : undefined;
    this.send({
      op: 'error',
      code,
      message: truncate(message, WS_LIMITS.messageBytes),
      ...(resume === undefined ? {} : { resume }),
    });
    this.ws.close(WS_CODES[code].close, code);
    const socket = this.ws;
    setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
    this.closed(code);
  }

  /** Destroys the socket without a word (abortGateway: a crash as the client sees it). */
  abort(): void {
    this.ws.terminate();
    this.closed('CLIENT');
  }

  private closed(code: WsErrorCode | 'CLIENT'): void {
    if (this.state === 'closed') return;
    this.stopPauseTimer();
    this.unwatch?.();
    this.driver?.close();
    this.node.heartbeat.remove(this);
    this.node.release(this);
    this.transition('closed', { code });
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `text` cut to at most `bytes` UTF-8 bytes, never inside a character. */
function truncate(text: string, bytes: number): string {
  if (utf8Bytes(text) <= bytes) return text;
  let out = text.slice(0, bytes);
  while (utf8Bytes(out) > bytes - 1) out = out.slice(0, -1);
  return `${out}…`;
}
