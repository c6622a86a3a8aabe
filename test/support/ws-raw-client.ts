// A test driver that speaks onceflow.v1 frames over the real `ws` package, with none of a client
// library's help: it sends exactly what a test writes and records every frame and the close.
import { WebSocket } from 'ws';

/** A server frame as received (parsed JSON; the tests check shapes themselves). */
// biome-ignore lint/suspicious/noExplicitAny: frames are inspected field by field in tests
export type Frame = Record<string, any>;

export interface Closed {
  readonly code: number;
  readonly reason: string;
}

/** Generous: a loaded 2-core box with Redis and other test files running beside this one. */
export const WAIT_MS = 15_000;

export class RawClient {
  readonly frames: Frame[] = [];
  readonly closed: Promise<Closed>;
  closeInfo: Closed | undefined;
  /** Answer server pings with pongs (off: a silent client). */
  answerPings = true;
  private readonly waiters = new Set<() => void>();

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      const text = isBinary ? '' : String(data);
      let frame: Frame;
      try {
        frame = JSON.parse(text) as Frame;
      } catch {
        frame = { op: '<unparsable>', text };
      }
      this.frames.push(frame);
      if (frame.op === 'ping' && this.answerPings && ws.readyState === WebSocket.OPEN)
        ws.send('{"op":"pong"}');
      this.wake();
    });
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closeInfo = { code, reason: String(reason) };
        resolve(this.closeInfo);
        this.wake();
      });
    });
    ws.on('error', () => {});
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Sends an object as JSON text, or a raw string / buffer as given. */
  send(frame: Frame | string | Buffer, binary = false): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    const data = typeof frame === 'string' || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame);
    this.ws.send(data, { binary });
  }

  hello(session: string, extra: Frame = {}): void {
    this.send({ op: 'hello', v: 1, session, ...extra });
  }

  /** hello, then the welcome (throws with the frames seen when an error frame or close comes first). */
  async handshake(session: string, extra: Frame = {}): Promise<Frame> {
    const from = this.frames.length;
    this.hello(session, extra);
    const f = await this.waitFor((x) => x.op === 'welcome' || x.op === 'error', { from });
    if (f.op !== 'welcome') throw new Error(`handshake refused: ${JSON.stringify(f)}`);
    return f;
  }

  msg(seq: number, id: string, type: string, body: unknown = null): void {
    this.send({ op: 'msg', id, seq, type, body });
  }

  /** The first frame at index >= `from` matching `pred`; waits for it up to `timeout` ms. */
  waitFor(pred: (f: Frame) => boolean, opts: { from?: number; timeout?: number } = {}): Promise<Frame> {
    const from = opts.from ?? 0;
    return new Promise((resolve, reject) => {
      const check = () => {
        for (let i = from; i < this.frames.length; i++) {
          const f = this.frames[i] as Frame;
          if (pred(f)) {
            done();
            resolve(f);
            return true;
          }
        }
        if (this.closeInfo !== undefined) {
          done();
          reject(new Error(`closed ${JSON.stringify(this.closeInfo)}; frames ${this.dump(from)}`));
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no matching frame in ${opts.timeout ?? WAIT_MS} ms; frames ${this.dump(from)}`));
      }, opts.timeout ?? WAIT_MS);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(listener);
      };
      const listener = () => void check();
      if (!check()) this.waiters.add(listener);
    });
  }

  /** Waits until `n` frames match `pred` (counted from index `from`); returns them. */
  async waitCount(pred: (f: Frame) => boolean, n: number, opts: { from?: number; timeout?: number } = {}) {
    const from = opts.from ?? 0;
    await this.waitFor(() => this.frames.slice(from).filter(pred).length >= n, opts);
    return this.frames.slice(from).filter(pred);
  }

  /** The acks received (from index `from`). */
  acks(from = 0): Frame[] {
    return this.frames.slice(from).filter((f) => f.op === 'ack');
  }

  msgs(from = 0): Frame[] {
    return this.frames.slice(from).filter((f) => f.op === 'msg');
  }

  /** The error frame and the close, once the server closes. */
  async failure(timeout = WAIT_MS): Promise<{ error: Frame | undefined; close: Closed }> {
    const close = await withTimeout(this.closed, timeout, 'close');
    return { error: this.frames.find((f) => f.op === 'error'), close };
  }

  close(): Promise<Closed> {
    if (this.closeInfo === undefined) this.ws.close(1000);
    return this.closed;
  }

  terminate(): void {
    this.ws.terminate();
  }

  private dump(from: number): string {
    return JSON.stringify(this.frames.slice(from, from + 20)).slice(0, 2000);
  }
}

export interface ConnectOptions {
  /** The subprotocol; `null` asks for none. Default 'onceflow.v1'. */
  protocol?: string | null;
  headers?: Record<string, string>;
  path?: string;
}

/** Opens a WebSocket to the gateway on `port`; rejects with `{ status }` when the upgrade is refused. */
export function connectRaw(port: number, options: ConnectOptions = {}): Promise<RawClient> {
  const protocol = options.protocol === undefined ? 'onceflow.v1' : options.protocol;
  const url = `ws://127.0.0.1:${port}${options.path ?? '/'}`;
  const ws =
    protocol === null
      ? new WebSocket(url, { headers: options.headers ?? {} })
      : new WebSocket(url, protocol, { headers: options.headers ?? {} });
  const client = new RawClient(ws);
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_req, res) => {
      reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode }));
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

/** Opens and completes the handshake. */
export async function open(port: number, session: string, hello: Frame = {}, options: ConnectOptions = {}) {
  const client = await connectRaw(port, options);
  const welcome = await client.handshake(session, hello);
  return { client, welcome };
}

let sessionCounter = 0;
/** A fresh session string (16-64 of [A-Za-z0-9_-]). */
export function newSession(tag = 's'): string {
  sessionCounter += 1;
  return `${tag}-${process.pid}-${Date.now().toString(36)}-${sessionCounter}`.padEnd(22, 'x');
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
    }),
  ]);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
