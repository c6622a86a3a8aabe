import { InvalidArgumentError } from '../../core/errors.js';
import { knownKeys } from '../../core/validate.js';
import {
  type ClientFrame,
  type ErrorFrame,
  encodeClientFrame,
  parseServerFrame,
  type Resume,
  type ServerMsgFrame,
  type WelcomeFrame,
} from '../frames.js';
import { WS_LIMITS, WS_SUBPROTOCOL } from '../limits.js';
import { backoffDelay } from './backoff.js';
import { afterClose } from './close-policy.js';
import { Emitter } from './emitter.js';
import { WsClientError } from './errors.js';
import { Inbox } from './inbox.js';
import { type ClientOptions, type ResolvedOptions, resolveOptions } from './options.js';
import { Outbox, type SendResult } from './outbox.js';
import { randomId } from './random-id.js';
import { SilenceWatch } from './silence-watch.js';
import type { Client, ClientEvents, ClientState, SendOptions, SocketLike } from './types.js';

export type { Client, ClientEvents, ClientState, SendOptions, ServerMessage } from './types.js';

const OPEN = 1;
// The protocol asks clients to treat a server silent for 2 x heartbeatMs "plus a few seconds" as
// gone: 5 s absorbs a stalled event loop on either side and a slow mobile link's delay.
const SILENCE_GRACE_MS = 5_000;
// Close codes a client may send from any WebSocket implementation (browsers allow only 1000 and
// 3000-4999): 4000 for a connection this client gave up on (silence, protocol, timeout).
const CLIENT_DROP = 4000;
// How long close() waits for the server's closing handshake before it lets the socket go.
const CLOSE_WAIT_MS = 2_000;
// Both a browser and Node have `performance.now()`: monotonic, unlike Date.now().
const now = (): number => performance.now();

class OnceflowClient implements Client {
  readonly #o: ResolvedOptions;
  readonly #events = new Emitter<ClientEvents>((event, err) => this.#listenerFailed(event, err));
  readonly #outbox: Outbox;
  #state: ClientState = 'connecting';
  readonly #inbox: Inbox;
  #recovered: boolean | undefined;
  // Per connection: a new generation makes every callback of older sockets a no-op.
  #gen = 0;
  #socket: SocketLike | undefined;
  #welcome: WelcomeFrame | undefined;
  #errorFrame: ErrorFrame | undefined;
  #transportError: unknown;
  #attempt = 0;
  #inFlightCap: number;
  #maxFrameBytes: number = WS_LIMITS.maxFrameBytes;
  #lastAckAt = 0;
  #silence: SilenceWatch | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined; // connect timeout or backoff wait
  #ackTimer: ReturnType<typeof setTimeout> | undefined;
  #closed: Promise<void> | undefined;

  constructor(options: ClientOptions) {
    this.#o = resolveOptions(options);
    this.#outbox = new Outbox(this.#o.maxQueued);
    this.#inbox = new Inbox(this.#o.resume);
    this.#inFlightCap = this.#o.maxInFlight;
    // A microtask later, so that listeners added right after createClient() see the first connect.
    queueMicrotask(() => this.#connect());
  }

  get state(): ClientState {
    return this.#state;
  }
  get session(): string {
    return this.#o.session;
  }
  get recovered(): boolean | undefined {
    return this.#recovered;
  }
  get position(): Resume | undefined {
    return this.#inbox.position;
  }
  get pending(): { inFlight: number; queued: number } {
    return { inFlight: this.#outbox.inFlight, queued: this.#outbox.queued };
  }

  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void {
    if (typeof listener !== 'function') throw new InvalidArgumentError('listener', 'a function', listener);
    return this.#events.on(event, listener);
  }

  send(type: string, body: unknown, options: SendOptions = {}): Promise<SendResult> {
    if (this.#state === 'closed') {
      return Promise.reject(new WsClientError('CLOSED', 'the client is closed', { outcome: 'not-sent' }));
    }
    try {
      if (typeof options !== 'object' || options === null) {
        throw new InvalidArgumentError('options', 'an object { id? }', options);
      }
      knownKeys('options', options, ['id'], 'argument');
    } catch (err) {
      return Promise.reject(err);
    }
    const id = options.id ?? randomId() ?? `${Date.now()}.${Math.random().toString(36).slice(2)}`;
    const result = this.#outbox.add(id, type, body, this.#maxFrameBytes);
    this.#pump();
    return result;
  }

  close(): Promise<void> {
    if (this.#closed) return this.#closed;
    this.#closed = new Promise<void>((resolve) => {
      const socket = this.#socket;
      if (socket && this.#welcome) this.#flushAck();
      this.#finish(new WsClientError('CLOSED', 'the client was closed', {}), 'the client was closed');
      if (!socket || socket.readyState > OPEN) return resolve();
      const done = setTimeout(resolve, CLOSE_WAIT_MS);
      socket.onclose = () => {
        clearTimeout(done);
        resolve();
      };
      try {
        socket.close(1000, 'client closed');
      } catch {
        clearTimeout(done);
        resolve();
      }
    });
    return this.#closed;
  }

  #setState(state: ClientState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#events.emit('state', state);
  }

  #report(err: WsClientError): void {
    this.#events.emit('error', err);
  }

  #listenerFailed(event: keyof ClientEvents, err: unknown): void {
    // An error listener that throws has nowhere left to report to: rethrown outside the client, as
    // an uncaught error, rather than lost.
    if (event === 'error') {
      queueMicrotask(() => {
        throw err;
      });
      return;
    }
    this.#report(new WsClientError('LISTENER', `a '${event}' listener threw`, { cause: err }));
  }

  async #connect(): Promise<void> {
    const gen = ++this.#gen;
    this.#welcome = undefined;
    this.#errorFrame = undefined;
    this.#transportError = undefined;
    this.#clearTimer();
    if (this.#state === 'closed') return;
    let token: string | undefined;
    if (this.#o.token) {
      try {
        token = await this.#o.token();
      } catch (err) {
        if (gen !== this.#gen) return;
        this.#report(new WsClientError('TOKEN', 'the token function failed', { cause: err }));
        this.#dropped(0);
        return;
      }
      if (gen !== this.#gen) return;
    }
    const hello: ClientFrame = {
      op: 'hello',
      v: 1,
      session: this.#o.session,
      ...(token === undefined ? {} : { token }),
      ...(this.#inbox.position === undefined ? {} : { resume: this.#inbox.position }),
    };
    let socket: SocketLike;
    let helloText: string;
    try {
      helloText = encodeClientFrame(hello);
    } catch (err) {
      this.#report(
        new WsClientError('TOKEN', 'the token is not one the protocol carries (1-8192 bytes)', {
          cause: err,
        }),
      );
      this.#dropped(0);
      return;
    }
    try {
      socket = new this.#o.WebSocket(this.#o.url, [WS_SUBPROTOCOL]) as SocketLike;
    } catch (err) {
      this.#report(new WsClientError('TRANSPORT', 'the WebSocket could not be created', { cause: err }));
      this.#dropped(0);
      return;
    }
    this.#socket = socket;
    this.#timer = setTimeout(() => {
      if (gen !== this.#gen) return;
      this.#giveUp(new WsClientError('TIMEOUT', `no welcome within ${this.#o.connectTimeoutMs} ms`));
    }, this.#o.connectTimeoutMs);
    // Handlers stay attached for the socket's life (gen-guarded): `ws` throws on an 'error'
    // event that has no listener.
    socket.onopen = () => {
      if (gen === this.#gen) this.#write(helloText);
    };
    socket.onmessage = (ev) => {
      if (gen === this.#gen) this.#onData(ev.data);
    };
    socket.onerror = (ev) => {
      if (gen === this.#gen) this.#transportError = (ev as { error?: unknown }).error ?? ev;
    };
    socket.onclose = (ev) => {
      if (gen === this.#gen) this.#onClose(ev.code, ev.reason);
    };
  }

  #write(text: string): void {
    const socket = this.#socket;
    if (socket?.readyState !== OPEN) return;
    try {
      socket.send(text);
    } catch (err) {
      this.#transportError = err;
    }
  }

  #onData(data: unknown): void {
    this.#silence?.heard();
    if (typeof data !== 'string') {
      this.#giveUp(
        new WsClientError('PROTOCOL', 'the server sent a binary frame; the protocol has text frames only'),
      );
      return;
    }
    const parsed = parseServerFrame(data);
    if (!parsed.ok) {
      this.#giveUp(
        new WsClientError(
          'PROTOCOL',
          `the server sent a frame this client refuses (${parsed.code}: ${parsed.message})`,
        ),
      );
      return;
    }
    const frame = parsed.frame;
    if (frame.op === 'error') {
      this.#errorFrame = frame; // the close follows; reported then, with its close code
      return;
    }
    if (frame.op === 'ping') {
      this.#write('{"op":"pong"}');
      return;
    }
    if (frame.op === 'pong') return;
    if (!this.#welcome) {
      if (frame.op === 'welcome') this.#onWelcome(frame);
      else this.#giveUp(new WsClientError('PROTOCOL', `the server sent '${frame.op}' before its welcome`));
      return;
    }
    if (frame.op === 'msg') this.#onMessage(frame);
    else if (frame.op === 'ack') {
      if (this.#outbox.settle(frame)) this.#pump();
      else
        this.#report(
          new WsClientError(
            'PROTOCOL',
            `the server acked seq ${frame.seq} id ${frame.id}, which is not in flight`,
          ),
        );
    } else this.#giveUp(new WsClientError('PROTOCOL', 'the server sent a second welcome'));
  }

  #onWelcome(w: WelcomeFrame): void {
    if (w.session !== this.#o.session) {
      this.#giveUp(
        new WsClientError('PROTOCOL', `the welcome names session ${w.session}, not this client's`),
      );
      return;
    }
    const gen = this.#gen;
    this.#clearTimer();
    this.#welcome = w;
    this.#attempt = 0;
    this.#recovered = w.recovered;
    this.#inFlightCap = Math.min(this.#o.maxInFlight, w.limits.maxInFlight);
    this.#maxFrameBytes = w.limits.maxFrameBytes;
    this.#inbox.welcome(w);
    this.#lastAckAt = now();
    const unknown = this.#outbox.welcome(w.continued, w.seq);
    // Every unacked frame again, unchanged, in seq order, before any new one (section 3).
    for (const text of this.#outbox.inFlightFrames()) this.#write(text);
    this.#state = 'open'; // set before the events, so a send() from a listener goes straight out
    this.#pump();
    this.#watchSilence();
    this.#events.emit('welcome', w);
    if (unknown.length > 0 && gen === this.#gen) this.#events.emit('unknown', unknown);
    if (gen === this.#gen && this.#state === 'open') this.#events.emit('state', 'open');
  }

  #onMessage(m: ServerMsgFrame): void {
    const verdict = this.#inbox.accept(m);
    if (verdict === 'repeat') return; // processed already: each offset once
    if (verdict !== 'new') {
      // Resuming from the last processed offset heals a gap or a stray epoch.
      this.#giveUp(new WsClientError('PROTOCOL', verdict.problem));
      return;
    }
    this.#events.emit('message', { offset: m.offset, epoch: m.epoch, type: m.type, body: m.body });
    this.#scheduleAck();
  }

  // One ack per burst: after the current turn, and at once when half a heartbeat passed since
  // the last (the protocol's bound on ack delay while messages arrive).
  #scheduleAck(): void {
    const half = (this.#welcome?.limits.heartbeatMs ?? WS_LIMITS.minHeartbeatMs) / 2;
    if (now() - this.#lastAckAt >= half) {
      this.#flushAck();
      return;
    }
    this.#ackTimer ??= setTimeout(() => {
      this.#ackTimer = undefined;
      this.#flushAck();
    }, 0);
  }

  #flushAck(): void {
    if (this.#ackTimer !== undefined) clearTimeout(this.#ackTimer);
    this.#ackTimer = undefined;
    const offset = this.#welcome ? this.#inbox.takeAck() : undefined;
    if (offset === undefined) return;
    this.#lastAckAt = now();
    this.#write(`{"op":"ack","offset":${offset}}`);
  }

  #pump(): void {
    if (this.#state !== 'open' || !this.#welcome) return;
    for (const text of this.#outbox.take(this.#inFlightCap, this.#maxFrameBytes)) this.#write(text);
  }

  #watchSilence(): void {
    const heartbeatMs = this.#welcome?.limits.heartbeatMs ?? WS_LIMITS.maxHeartbeatMs;
    const gen = this.#gen;
    this.#silence?.stop();
    this.#silence = new SilenceWatch(2 * heartbeatMs + SILENCE_GRACE_MS, (silentMs) => {
      if (gen !== this.#gen) return;
      this.#giveUp(new WsClientError('TIMEOUT', `the server was silent for ${Math.round(silentMs)} ms`));
    });
  }

  /** This client ends the connection (timeout, silence, protocol): report, then reconnect. */
  #giveUp(err: WsClientError): void {
    const socket = this.#socket;
    this.#gen++;
    this.#socket = undefined;
    try {
      socket?.close(CLIENT_DROP, err.code);
    } catch {
      // already closing: the socket is left behind either way
    }
    this.#report(err);
    this.#dropped(0);
  }

  #onClose(code: number, reason: string): void {
    this.#gen++;
    this.#socket = undefined;
    const frame = this.#errorFrame;
    const err = frame
      ? new WsClientError(frame.code, frame.message, {
          closeCode: code,
          frame,
          ...(frame.resume === undefined ? {} : { resume: frame.resume }),
          ...(frame.retryAfterMs === undefined ? {} : { retryAfterMs: frame.retryAfterMs }),
        })
      : new WsClientError('TRANSPORT', `the connection closed (${code}${reason ? ` ${reason}` : ''})`, {
          closeCode: code,
          ...(this.#transportError === undefined ? {} : { cause: this.#transportError }),
        });
    if (frame?.resume) this.#inbox.adopt(frame.resume);
    this.#report(err);
    const next = afterClose(frame, code);
    if (next.action === 'stop') {
      this.#finish(err, `the server refused this client (${err.code})`);
      return;
    }
    this.#dropped(next.at === 'once' ? 'once' : next.atLeastMs);
  }

  /**
   * After a connection ended: connect again at `'once'`, or after a backoff of at least
   * `atLeastMs`; or close for good when reconnecting is off.
   */
  #dropped(atLeastMs: number | 'once'): void {
    this.#clearTimer();
    if (this.#ackTimer !== undefined) clearTimeout(this.#ackTimer);
    this.#ackTimer = undefined;
    this.#welcome = undefined;
    if (this.#state === 'closed') return;
    const reconnect = this.#o.reconnect;
    if (reconnect === false) {
      this.#finish(
        new WsClientError('CLOSED', 'the connection ended and reconnect is off'),
        'the connection ended and reconnect is off',
      );
      return;
    }
    const delay =
      atLeastMs === 'once'
        ? 0
        : Math.max(
            atLeastMs,
            backoffDelay(this.#attempt++, reconnect.minMs, reconnect.maxMs, this.#o.random),
          );
    this.#setState('reconnecting');
    if (this.#state !== 'reconnecting') return; // a listener closed the client
    this.#timer = setTimeout(() => void this.#connect(), delay);
  }

  #finish(cause: WsClientError, reason: string): void {
    this.#gen++;
    this.#clearTimer();
    if (this.#ackTimer !== undefined) clearTimeout(this.#ackTimer);
    this.#ackTimer = undefined;
    this.#socket = undefined;
    this.#welcome = undefined;
    this.#outbox.rejectAll(reason, cause);
    this.#setState('closed');
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#silence?.stop();
    this.#silence = undefined;
  }
}

/**
 * A client of an onceflow gateway (docs/ws-protocol.md, docs/ws-client.md): it connects at once,
 * and across reconnects keeps one session, sends each message under one `(seq, id)` until the
 * server acks it (re-sent after a reconnect, answered `duplicate`), and delivers each server
 * message once, in offset order, resuming from the last one processed. Unacked plus queued
 * messages are bounded by `maxInFlight` and `maxQueued`; dedup state is one offset.
 *
 * @example
 * ```ts
 * import { createClient } from 'onceflow/ws/client';
 * import WebSocket from 'ws';
 *
 * // Nothing listens on port 9: the message waits in the queue until close() gives up on it.
 * const client = createClient({ url: 'ws://127.0.0.1:9', WebSocket, reconnect: false });
 * client.on('error', () => {});
 * const sent = client.send('chat.send', { text: 'hi' }).catch((e) => [e.code, e.outcome]);
 * client.pending; // { inFlight: 0, queued: 1 }
 * await client.close();
 * await sent; // ['CLOSED', 'not-sent']
 * client.state; // 'closed'
 * ```
 */
export function createClient(options: ClientOptions): Client {
  return new OnceflowClient(options);
}
