import { ACK_CODES, type FrameErrorCode, isWsErrorCode } from './errors.js';
import { bodyProblem, utf8Bytes } from './json-body.js';
import { WS_LIMITS, WS_VERSION } from './limits.js';

/** What is wrong with a frame, or `null`. */
export type Problem = { code: FrameErrorCode; message: string } | null;
type Check = (value: unknown, path: string, maxBodyDepth: number) => Problem;

interface Field {
  readonly check: Check;
  readonly optional?: boolean;
}
/** A frame's fields in the order an encoder writes them, `op` first. */
export type Shape = Readonly<Record<string, Field>>;

const bad = (path: string, expected: string): Problem => ({
  code: 'BAD_FRAME',
  message: `${path}: expected ${expected}`,
});

const ID = /^[A-Za-z0-9._:-]+$/;
const TYPE = /^[A-Za-z][A-Za-z0-9._:-]*$/;
const TOKEN_CHARS = /^[A-Za-z0-9_-]+$/;

function pattern(re: RegExp, min: number, max: number, what: string): Check {
  // These charsets are ASCII, so `length` is the byte count.
  return (v, path) =>
    typeof v === 'string' && v.length >= min && v.length <= max && re.test(v)
      ? null
      : bad(path, `${what}, ${min}-${max} characters of ${re.source.slice(1, -1)}`);
}

function text(min: number, maxBytes: number): Check {
  return (v, path) =>
    typeof v === 'string' && v.length >= min && utf8Bytes(v) <= maxBytes
      ? null
      : bad(path, `a string of ${min}-${maxBytes} UTF-8 bytes`);
}

function integer(min: number, max = Number.MAX_SAFE_INTEGER): Check {
  return (v, path) =>
    Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max
      ? null
      : bad(path, `an integer from ${min} to ${max}`);
}

function literal(value: unknown): Check {
  return (v, path) => (v === value ? null : bad(path, JSON.stringify(value)));
}

const boolean: Check = (v, path) => (typeof v === 'boolean' ? null : bad(path, 'true or false'));
const body: Check = (v, path, maxBodyDepth) => bodyProblem(v, maxBodyDepth, path);
const errorCode: Check = (v, path) =>
  isWsErrorCode(v) ? null : bad(path, 'a code of the error table sent in error frames');

function object(shape: Shape): Check {
  return (v, path, maxBodyDepth) => objectProblem(v, shape, path, maxBodyDepth);
}

/**
 * Why `value` does not have `shape`, or `null`: a plain object whose keys are all in the shape
 * (`__proto__` is refused first, then any other unknown key), each field passing its check, the
 * optional ones absent rather than `null`.
 */
export function objectProblem(value: unknown, shape: Shape, path: string, maxBodyDepth: number): Problem {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad(path, 'an object');
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return bad(path, 'a plain object');
  const keys = Object.keys(value);
  for (const key of keys) {
    if (key === '__proto__') return { code: 'FORBIDDEN_KEY', message: `${path} has the key __proto__` };
  }
  for (const key of keys) {
    if (!Object.hasOwn(shape, key)) {
      return {
        code: 'UNKNOWN_FIELD',
        message: `${path} has the unknown field ${JSON.stringify(key).slice(0, 80)} (v${WS_VERSION} fields: ${Object.keys(shape).join(', ')})`,
      };
    }
  }
  for (const [key, field] of Object.entries(shape)) {
    const v = (value as Record<string, unknown>)[key];
    if (!Object.hasOwn(value, key)) {
      if (field.optional) continue;
      return bad(`${path}.${key}`, 'a value (the field is required)');
    }
    const problem = field.check(v, `${path}.${key}`, maxBodyDepth);
    if (problem) return problem;
  }
  return null;
}

const RESUME: Shape = {
  offset: { check: integer(0) },
  epoch: { check: pattern(TOKEN_CHARS, 1, WS_LIMITS.epochBytes, 'an epoch') },
};
const id = pattern(ID, 1, WS_LIMITS.idBytes, 'an id');
const type = pattern(TYPE, 1, WS_LIMITS.typeBytes, 'a type');
const epoch = RESUME.epoch as Field;
const seq = integer(1);
const offset = integer(0);

/** Client frames by `op`. */
export const CLIENT_SHAPES: Readonly<Record<string, Shape>> = {
  hello: {
    op: { check: literal('hello') },
    v: { check: literal(WS_VERSION) },
    session: { check: pattern(TOKEN_CHARS, WS_LIMITS.sessionMinBytes, WS_LIMITS.sessionBytes, 'a session') },
    token: { check: text(1, WS_LIMITS.tokenBytes), optional: true },
    resume: { check: object(RESUME), optional: true },
  },
  msg: {
    op: { check: literal('msg') },
    id: { check: id },
    seq: { check: seq },
    type: { check: type },
    body: { check: body },
  },
  ack: { op: { check: literal('ack') }, offset: { check: offset } },
  ping: { op: { check: literal('ping') } },
  pong: { op: { check: literal('pong') } },
};

const LIMITS_SHAPE: Shape = {
  maxFrameBytes: { check: integer(1024, WS_LIMITS.maxFrameBytes) },
  maxInFlight: { check: integer(1, WS_LIMITS.maxInFlightCap) },
  heartbeatMs: { check: integer(WS_LIMITS.minHeartbeatMs, WS_LIMITS.maxHeartbeatMs) },
  sessionTtlMs: { check: integer(1000, WS_LIMITS.maxSessionTtlMs) },
};

/** Server frames by `op`. */
export const SERVER_SHAPES: Readonly<Record<string, Shape>> = {
  welcome: {
    op: { check: literal('welcome') },
    v: { check: literal(WS_VERSION) },
    user: { check: text(1, WS_LIMITS.userBytes) },
    session: CLIENT_SHAPES.hello?.session as Field,
    continued: { check: boolean },
    seq: { check: integer(0) },
    epoch,
    offset: { check: offset },
    recovered: { check: boolean },
    limits: { check: object(LIMITS_SHAPE) },
  },
  msg: {
    op: { check: literal('msg') },
    offset: { check: integer(1) },
    epoch,
    type: { check: type },
    body: { check: body },
  },
  ack: {
    op: { check: literal('ack') },
    seq: { check: seq },
    id: { check: id },
    outcome: {
      check: (v, path) =>
        v === 'handled' || v === 'limited' || v === 'rejected'
          ? null
          : bad(path, '"handled", "limited" or "rejected"'),
    },
    duplicate: { check: literal(true), optional: true },
    code: { check: (v, path) => (typeof v === 'string' ? null : bad(path, 'an ack code')), optional: true },
    retryAfterMs: { check: integer(0), optional: true },
  },
  error: {
    op: { check: literal('error') },
    code: { check: errorCode },
    message: { check: text(0, WS_LIMITS.messageBytes) },
    seq: { check: seq, optional: true },
    id: { check: id, optional: true },
    resume: { check: object(RESUME), optional: true },
    retryAfterMs: { check: integer(0), optional: true },
  },
  ping: { op: { check: literal('ping') } },
  pong: { op: { check: literal('pong') } },
};

/** The rules of a server `ack` across its fields: which outcome carries which code. */
export function ackProblem(frame: Record<string, unknown>): Problem {
  const { outcome, code, retryAfterMs } = frame;
  if (outcome === 'handled') {
    if (code !== undefined || retryAfterMs !== undefined)
      return bad('frame', 'no code nor retryAfterMs with "handled"');
    return null;
  }
  if (outcome === 'limited') {
    if (!ACK_CODES.limited.includes(code as never))
      return bad('frame.code', `"${ACK_CODES.limited.join('", "')}"`);
    if (retryAfterMs === undefined) return bad('frame.retryAfterMs', 'a value with "limited"');
    return null;
  }
  if (!ACK_CODES.rejected.includes(code as never))
    return bad('frame.code', `one of "${ACK_CODES.rejected.join('", "')}"`);
  if (retryAfterMs !== undefined) return bad('frame.retryAfterMs', 'absent with "rejected"');
  return null;
}
