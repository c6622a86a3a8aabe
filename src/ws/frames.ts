import { InvalidArgumentError } from '../core/errors.js';
import type { FrameErrorCode, WsAckCode, WsErrorCode } from './errors.js';
import { type JsonValue, utf8Bytes } from './json-body.js';
import { type FrameLimits, WS_LIMITS, WS_VERSION } from './limits.js';
import {
  ackProblem,
  CLIENT_SHAPES,
  objectProblem,
  type Problem,
  SERVER_SHAPES,
  type Shape,
} from './shapes.js';

export type { JsonValue } from './json-body.js';

/** A position in a user's stream: every message after `offset`, in the stream's life `epoch`. */
export interface Resume {
  readonly offset: number;
  readonly epoch: string;
}

/** The first frame of a connection: who the client is and where it resumes. */
export interface HelloFrame {
  readonly op: 'hello';
  readonly v: 1;
  /** The client session, spanning reconnects: its seq numbers and dedup window live in the store under it. */
  readonly session: string;
  readonly token?: string;
  /** The last server message the client holds; absent on a first connection. */
  readonly resume?: Resume;
}
/** A message to a handler: handled once per `id`, in `seq` order within the session. */
export interface ClientMsgFrame {
  readonly op: 'msg';
  readonly id: string;
  readonly seq: number;
  readonly type: string;
  readonly body: JsonValue;
}
/** Every server message up to `offset` (of the connection's epoch) is processed: cumulative. */
export interface ClientAckFrame {
  readonly op: 'ack';
  readonly offset: number;
}
export interface PingFrame {
  readonly op: 'ping';
}
export interface PongFrame {
  readonly op: 'pong';
}
export type ClientFrame = HelloFrame | ClientMsgFrame | ClientAckFrame | PingFrame | PongFrame;

/** What the server announces in `welcome`; the client keeps within it. */
export interface WelcomeLimits {
  readonly maxFrameBytes: number;
  readonly maxInFlight: number;
  readonly heartbeatMs: number;
  readonly sessionTtlMs: number;
}
export interface WelcomeFrame {
  readonly op: 'welcome';
  readonly v: 1;
  readonly user: string;
  readonly session: string;
  /** The server held the session's state: `seq` is its highest handled seq. `false`: a new session, seq restarts at 1. */
  readonly continued: boolean;
  readonly seq: number;
  readonly epoch: string;
  /** Messages follow from `offset + 1`. */
  readonly offset: number;
  /**
   * Every message after the resumed position (`hello.resume`, else the session's last acked
   * offset) follows, in order; `false`: no such position, another epoch, or the history lacks a
   * message after it, and only messages after `offset` follow (docs/ws-protocol.md section 4).
   */
  readonly recovered: boolean;
  readonly limits: WelcomeLimits;
}
export interface ServerMsgFrame {
  readonly op: 'msg';
  readonly offset: number;
  readonly epoch: string;
  readonly type: string;
  readonly body: JsonValue;
}
export type ServerAckFrame =
  | {
      readonly op: 'ack';
      readonly seq: number;
      readonly id: string;
      readonly outcome: 'handled';
      readonly duplicate?: true;
    }
  | {
      readonly op: 'ack';
      readonly seq: number;
      readonly id: string;
      readonly outcome: 'limited';
      readonly duplicate?: true;
      readonly code: Extract<WsAckCode, 'RATE_LIMITED'>;
      readonly retryAfterMs: number;
    }
  | {
      readonly op: 'ack';
      readonly seq: number;
      readonly id: string;
      readonly outcome: 'rejected';
      readonly duplicate?: true;
      readonly code: Exclude<WsAckCode, 'RATE_LIMITED'>;
    };
/** The connection ends after it, with the WebSocket close code of `code` (WS_CODES). */
export interface ErrorFrame {
  readonly op: 'error';
  readonly code: WsErrorCode;
  readonly message: string;
  readonly seq?: number;
  readonly id?: string;
  readonly resume?: Resume;
  readonly retryAfterMs?: number;
}
export type ServerFrame = WelcomeFrame | ServerMsgFrame | ServerAckFrame | ErrorFrame | PingFrame | PongFrame;

export type ParseResult<F> =
  | { readonly ok: true; readonly frame: F }
  | { readonly ok: false; readonly code: FrameErrorCode; readonly message: string };

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A client frame from a WebSocket message (a string, or the bytes of a text frame), checked in
 * this order, each step before any costlier one: size (before decoding and JSON.parse), UTF-8,
 * JSON, then shape and types. Never throws, and keeps nothing of a refused frame.
 * An own `__proto__` key anywhere is refused (FORBIDDEN_KEY), so the frame returned is safe to merge.
 * `parseClientFrame('{"op":"ack","offset":7}')` is `{ ok: true, frame: { op: 'ack', offset: 7 } }`;
 * with a field `"x":1` added it is `{ ok: false, code: 'UNKNOWN_FIELD', message }`.
 */
export function parseClientFrame(input: string | Uint8Array, limits?: FrameLimits): ParseResult<ClientFrame> {
  return parseFrame(input, limits, CLIENT_SHAPES) as ParseResult<ClientFrame>;
}

/** A server frame, checked like {@link parseClientFrame}: what a client runs on each message. */
export function parseServerFrame(input: string | Uint8Array, limits?: FrameLimits): ParseResult<ServerFrame> {
  return parseFrame(input, limits, SERVER_SHAPES) as ParseResult<ServerFrame>;
}

/** The JSON text of a client frame; a frame that its receiver would refuse throws ERR_INVALID_ARGUMENT. */
export function encodeClientFrame(frame: ClientFrame, limits?: FrameLimits): string {
  return encodeFrame(frame, limits, CLIENT_SHAPES);
}

/** The JSON text of a server frame; a frame that its receiver would refuse throws ERR_INVALID_ARGUMENT. */
export function encodeServerFrame(frame: ServerFrame, limits?: FrameLimits): string {
  return encodeFrame(frame, limits, SERVER_SHAPES);
}

function bounds(limits: FrameLimits | undefined): { maxFrameBytes: number; maxBodyDepth: number } {
  return {
    maxFrameBytes: limits?.maxFrameBytes ?? WS_LIMITS.maxFrameBytes,
    maxBodyDepth: limits?.maxBodyDepth ?? WS_LIMITS.maxBodyDepth,
  };
}

function fail(code: FrameErrorCode, message: string): ParseResult<never> {
  return { ok: false, code, message };
}

function parseFrame(
  input: string | Uint8Array,
  limits: FrameLimits | undefined,
  shapes: Readonly<Record<string, Shape>>,
): ParseResult<unknown> {
  const { maxFrameBytes, maxBodyDepth } = bounds(limits);
  let text: string;
  if (typeof input === 'string') {
    // Each UTF-16 unit is 1-3 bytes: counting is needed only between length and 3 x length.
    if (
      input.length > maxFrameBytes ||
      (input.length * 3 > maxFrameBytes && utf8Bytes(input) > maxFrameBytes)
    ) {
      return fail('FRAME_TOO_LARGE', `a frame holds at most ${maxFrameBytes} UTF-8 bytes`);
    }
    text = input;
  } else if (input instanceof Uint8Array) {
    if (input.byteLength > maxFrameBytes) {
      return fail('FRAME_TOO_LARGE', `a frame holds at most ${maxFrameBytes} UTF-8 bytes`);
    }
    try {
      text = decoder.decode(input);
    } catch {
      return fail('BAD_ENCODING', 'a frame is UTF-8 text');
    }
  } else {
    return fail('BAD_ENCODING', 'a frame is UTF-8 text');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail('NOT_JSON', 'a frame is one JSON object');
  }
  const problem = frameProblem(value, shapes, maxBodyDepth);
  return problem ? fail(problem.code, problem.message) : { ok: true, frame: value };
}

function frameProblem(
  value: unknown,
  shapes: Readonly<Record<string, Shape>>,
  maxBodyDepth: number,
): Problem {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { code: 'BAD_FRAME', message: 'a frame is a JSON object' };
  }
  const record = value as Record<string, unknown>;
  const op = Object.hasOwn(record, 'op') ? record.op : undefined;
  const shape = typeof op === 'string' && Object.hasOwn(shapes, op) ? shapes[op] : undefined;
  if (!shape) {
    return { code: 'BAD_FRAME', message: `frame.op: expected one of ${Object.keys(shapes).join(', ')}` };
  }
  // A frame of another version may carry fields this one does not know: its version is the
  // finding that tells the peer what to do, so it is checked before the fields.
  if (Object.hasOwn(shape, 'v') && record.v !== WS_VERSION) {
    return { code: 'BAD_VERSION', message: `frame.v: this peer speaks version ${WS_VERSION} only` };
  }
  const problem = objectProblem(value, shape, 'frame', maxBodyDepth);
  if (problem) return problem;
  return op === 'ack' && shapes === SERVER_SHAPES ? ackProblem(record) : null;
}

function encodeFrame(
  frame: object,
  limits: FrameLimits | undefined,
  shapes: Readonly<Record<string, Shape>>,
): string {
  const { maxFrameBytes, maxBodyDepth } = bounds(limits);
  const problem = frameProblem(frame, shapes, maxBodyDepth);
  if (problem)
    throw new InvalidArgumentError(
      'frame',
      `a frame its peer accepts (${problem.code}: ${problem.message})`,
      frame,
    );
  const text = JSON.stringify(frame);
  const bytes = utf8Bytes(text);
  if (bytes > maxFrameBytes) {
    throw new InvalidArgumentError('frame', `at most ${maxFrameBytes} UTF-8 bytes as JSON`, `${bytes} bytes`);
  }
  return text;
}
