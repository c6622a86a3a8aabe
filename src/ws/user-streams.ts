import { randomBytes } from 'node:crypto';
import { InvalidArgumentError, InvalidOptionError } from '../core/errors.js';
import { isWellFormed, knownKeys, nonNegativeInt, positiveInt } from '../core/validate.js';
import { bodyProblem, type JsonValue, utf8Bytes } from './json-body.js';
import { WS_LIMITS } from './limits.js';

/**
 * The per-user server-to-client stream of docs/ws-protocol.md §4: offsets 1, 2, 3, ... with no
 * gap within an epoch, kept in a store so any node can resume a client. The memory store
 * (user-streams-memory.ts) serves one process and is the model the Redis store
 * (user-streams-redis.ts) is tested against.
 */
export interface UserStreams {
  /**
   * Appends one message to `user`'s stream: its offset is the stream's next, in one atomic step.
   * With `options.id`, idempotent within a window: when the stream holds a publish with the same
   * id among the user's last `publishDedup` publishes with an id (same epoch), it answers that
   * publish's position and appends nothing, in the same atomic step; so a call retried after a
   * lost reply appends once (the retry's type and body are not compared: an id names one
   * message). A new epoch (the store lost the stream) forgets the ids with the
   * messages. Without an id, every call appends.
   */
  publish(user: string, type: string, body: JsonValue, options?: PublishOptions): Promise<StreamPosition>;
  /**
   * A page of `user`'s stream after `from`: every message after `from.offset` (at most `limit`)
   * when `recovered`, none when `from` cannot be resumed (no partial recovery; see {@link ReadResult}).
   * A user with no stream gets one (a new epoch, end 0), so a `welcome` always has an epoch.
   */
  read(user: string, from: StreamPosition | undefined, limit: number): Promise<ReadResult>;
  /**
   * Records `session`'s last acked position in `user`'s stream: never moves back within one epoch,
   * a new epoch replaces it. Kept `sessionTtlMs` after the last ack. Answers the position kept.
   */
  ackPosition(session: string, user: string, position: StreamPosition): Promise<SessionPosition>;
  /** `session`'s kept position, or `undefined` (never acked, or idle longer than `sessionTtlMs`). */
  position(session: string): Promise<SessionPosition | undefined>;
}

/** Options of {@link UserStreams.publish}. */
export interface PublishOptions {
  /**
   * The publish's dedup key, 1 to 128 of `[A-Za-z0-9._:-]` (a UUID, a ULID, or an application
   * key such as `order-881:shipped`): the bound and charset of a client message id.
   */
  readonly id?: string;
}

export interface StreamPosition {
  readonly offset: number;
  readonly epoch: string;
}

export interface SessionPosition extends StreamPosition {
  readonly user: string;
}

export interface StreamMessage {
  readonly offset: number;
  readonly type: string;
  readonly body: JsonValue;
}

/**
 * `recovered: true`: `from.epoch` is the stream's and the stream holds every message after
 * `from.offset`; `messages` are the first of them in order. `recovered: false`: `from` was
 * missing, of another epoch, past `end`, or retention dropped a message after it; `messages` is
 * empty and the client continues from `end`.
 */
export interface ReadResult {
  readonly epoch: string;
  /** The stream's last offset (0 when nothing was ever published in this epoch). */
  readonly end: number;
  readonly recovered: boolean;
  readonly messages: readonly StreamMessage[];
}

export interface UserStreamsOptions {
  /**
   * Messages kept per user, the newest. Default 1000: a chat user away for an evening finds the
   * evening's messages; 1000 x ~500-byte messages is ~0.5 MB per user (at worst 1000 x
   * `maxBodyBytes` = 64 MiB, which a deployment with large bodies lowers).
   */
  readonly maxLength?: number;
  /**
   * A message is kept while younger than this (0: no age bound). Default: `sessionTtlMs`, so a
   * session the store still holds finds every message of its absence that `maxLength` kept.
   */
  readonly maxAgeMs?: number;
  /**
   * A session's acked position is kept this long after its last ack. Default 1 day (a phone left
   * overnight resumes); at most WS_LIMITS.maxSessionTtlMs.
   */
  readonly sessionTtlMs?: number;
  /**
   * A body's JSON text, in UTF-8 bytes. Default: a frame's bound less 1 KiB for the `msg`
   * envelope (offset, type, epoch), so every stored message fits one frame.
   */
  readonly maxBodyBytes?: number;
  /**
   * The largest `limit` of a read. Default 256: 256 x 64 KiB = 16 MiB at worst in one reply,
   * and a catch-up of `maxLength` messages takes 4 reads.
   */
  readonly maxReadLimit?: number;
  /**
   * Publish ids remembered per user (the dedup window of `publish`), the newest; at most
   * 65,536. Default 1024: a retry follows a lost reply by seconds (a client timeout plus
   * backoff), and 1024 ids cover over 3 minutes of a user receiving 5 messages a second, far
   * above a chat or game user's usual rate. Costs at most 1024 x ~150 bytes (a 128-byte id and
   * its offset) = ~150 KiB per user, ~40 KiB with 26-byte ULIDs; only publishes with an id count.
   */
  readonly publishDedup?: number;
}

export const USER_STREAM_DEFAULTS = Object.freeze({
  maxLength: 1000,
  sessionTtlMs: 86_400_000,
  maxBodyBytes: WS_LIMITS.maxFrameBytes - 1024,
  maxReadLimit: 256,
  publishDedup: 1024,
});

/** The largest `publishDedup`: 65,536 x ~150 bytes = ~10 MiB per user at worst. */
export const MAX_PUBLISH_DEDUP = 65_536;

export const USER_STREAMS_KEYS: readonly string[] = [
  'maxLength',
  'maxAgeMs',
  'sessionTtlMs',
  'maxBodyBytes',
  'maxReadLimit',
  'publishDedup',
];

export interface ResolvedUserStreamsOptions {
  readonly maxLength: number;
  readonly maxAgeMs: number;
  readonly sessionTtlMs: number;
  readonly maxBodyBytes: number;
  readonly maxReadLimit: number;
  readonly publishDedup: number;
  /**
   * A stream's epoch and messages are dropped after this long without a publish or a read: the
   * longer of `maxAgeMs` (every message is gone by then anyway) and `sessionTtlMs` (a session
   * that acked the end may come back until then and must still find the same epoch).
   */
  readonly idleTtlMs: number;
}

/** Checks the options common to every store; `extra` are the store's own keys. */
export function resolveUserStreamsOptions(
  options: UserStreamsOptions & Record<string, unknown>,
  extra: readonly string[],
): ResolvedUserStreamsOptions {
  knownKeys('', options, [...USER_STREAMS_KEYS, ...extra]);
  const maxLength = positiveInt('maxLength', options.maxLength ?? USER_STREAM_DEFAULTS.maxLength);
  const sessionTtlMs = positiveInt('sessionTtlMs', options.sessionTtlMs ?? USER_STREAM_DEFAULTS.sessionTtlMs);
  if (sessionTtlMs > WS_LIMITS.maxSessionTtlMs) {
    throw new InvalidOptionError('sessionTtlMs', `at most ${WS_LIMITS.maxSessionTtlMs}`, sessionTtlMs);
  }
  const maxAgeMs = nonNegativeInt('maxAgeMs', options.maxAgeMs ?? sessionTtlMs);
  const maxBodyBytes = positiveInt('maxBodyBytes', options.maxBodyBytes ?? USER_STREAM_DEFAULTS.maxBodyBytes);
  if (maxBodyBytes > USER_STREAM_DEFAULTS.maxBodyBytes) {
    throw new InvalidOptionError(
      'maxBodyBytes',
      `at most ${USER_STREAM_DEFAULTS.maxBodyBytes}`,
      maxBodyBytes,
    );
  }
  const maxReadLimit = positiveInt('maxReadLimit', options.maxReadLimit ?? USER_STREAM_DEFAULTS.maxReadLimit);
  const publishDedup = positiveInt('publishDedup', options.publishDedup ?? USER_STREAM_DEFAULTS.publishDedup);
  if (publishDedup > MAX_PUBLISH_DEDUP) {
    throw new InvalidOptionError('publishDedup', `at most ${MAX_PUBLISH_DEDUP}`, publishDedup);
  }
  return {
    maxLength,
    maxAgeMs,
    sessionTtlMs,
    maxBodyBytes,
    maxReadLimit,
    publishDedup,
    idleTtlMs: Math.max(maxAgeMs, sessionTtlMs),
  };
}

/** A store's `now` option: a function returning ms, or undefined for the store's own clock. */
export function checkClock(now: unknown): (() => number) | undefined {
  if (now !== undefined && typeof now !== 'function') {
    throw new InvalidOptionError('now', 'a function returning ms', now);
  }
  return now as (() => number) | undefined;
}

const PUBLISH_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A publish's options: its id, or undefined when it has none. */
export function checkPublishOptions(options: unknown): string | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options', 'an object { id? }', options);
  }
  knownKeys('options', options, ['id'], 'argument');
  const { id } = options as Record<string, unknown>;
  if (id === undefined) return undefined;
  if (typeof id !== 'string' || !PUBLISH_ID.test(id)) {
    throw new InvalidArgumentError('options.id', '1 to 128 of [A-Za-z0-9._:-]', id);
  }
  return id;
}

const TYPE = /^[A-Za-z][A-Za-z0-9._:-]*$/;
const TOKEN = /^[A-Za-z0-9_-]+$/;

export function checkUser(user: unknown): string {
  if (
    typeof user !== 'string' ||
    user === '' ||
    !isWellFormed(user) ||
    // At most 3 bytes per UTF-16 unit: a short user is never counted.
    (user.length * 3 > WS_LIMITS.userBytes && utf8Bytes(user) > WS_LIMITS.userBytes)
  ) {
    throw new InvalidArgumentError('user', `a well-formed string of 1 to ${WS_LIMITS.userBytes} bytes`, user);
  }
  return user;
}

export function checkType(type: unknown): string {
  if (typeof type !== 'string' || !TYPE.test(type) || type.length > WS_LIMITS.typeBytes) {
    throw new InvalidArgumentError(
      'type',
      `[A-Za-z][A-Za-z0-9._:-]*, 1 to ${WS_LIMITS.typeBytes} bytes`,
      type,
    );
  }
  return type;
}

/** The body's JSON text, checked against the frame bounds and `maxBodyBytes`. */
export function encodeBody(body: unknown, maxBodyBytes: number): string {
  const problem = bodyProblem(body, WS_LIMITS.maxBodyDepth);
  if (problem) throw new InvalidArgumentError('body', `a JSON value (${problem.message})`, body);
  const text = JSON.stringify(body);
  // At most 3 bytes per UTF-16 unit: a body well under the bound is not counted.
  if (text.length * 3 > maxBodyBytes && utf8Bytes(text) > maxBodyBytes) {
    throw new InvalidArgumentError(
      'body',
      `at most ${maxBodyBytes} bytes of JSON`,
      `${utf8Bytes(text)} bytes`,
    );
  }
  return text;
}

export function checkSession(session: unknown): string {
  if (
    typeof session !== 'string' ||
    !TOKEN.test(session) ||
    session.length < WS_LIMITS.sessionMinBytes ||
    session.length > WS_LIMITS.sessionBytes
  ) {
    throw new InvalidArgumentError(
      'session',
      `[A-Za-z0-9_-], ${WS_LIMITS.sessionMinBytes} to ${WS_LIMITS.sessionBytes} bytes`,
      session,
    );
  }
  return session;
}

export function checkPosition(path: string, position: unknown): StreamPosition {
  if (typeof position !== 'object' || position === null) {
    throw new InvalidArgumentError(path, 'an object { offset, epoch }', position);
  }
  knownKeys(path, position, ['offset', 'epoch'], 'argument');
  const { offset, epoch } = position as Record<string, unknown>;
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
    throw new InvalidArgumentError(`${path}.offset`, 'a non-negative safe integer', offset);
  }
  if (typeof epoch !== 'string' || !TOKEN.test(epoch) || epoch.length > WS_LIMITS.epochBytes) {
    throw new InvalidArgumentError(
      `${path}.epoch`,
      `[A-Za-z0-9_-], 1 to ${WS_LIMITS.epochBytes} bytes`,
      epoch,
    );
  }
  return { offset, epoch };
}

export function checkLimit(limit: unknown, maxReadLimit: number): number {
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > maxReadLimit) {
    throw new InvalidArgumentError('limit', `an integer from 1 to ${maxReadLimit}`, limit);
  }
  return limit;
}

/**
 * This process's epoch prefix: 96 random bits (16 base64url characters), drawn once. An epoch
 * must be unique for a user's stream's life, never reused after a lost stream; it is no
 * credential (a read is scoped by the authenticated user, and a forged epoch only makes that
 * user's own resume answer `recovered: false`), so it need not be unpredictable once a process
 * has shown one. Two processes share a prefix with probability ~n^2 / 2^97.
 */
// Drawn at the first epoch, not at import: importing onceflow/ws starts no work.
let epochPrefix: string | undefined;
let epochCount = 0;

/**
 * A new epoch: the process's random prefix and a counter in base 36, at most 16 + 11 characters
 * of the epoch charset (the counter stays a safe integer). Drawing no randomness per call lets
 * the Redis store send a fresh candidate with every publish and read (the script keeps it only
 * for a new stream) at the cost of a string concatenation.
 */
export function newEpoch(): string {
  epochPrefix ??= randomBytes(12).toString('base64url');
  epochCount++;
  return epochPrefix + epochCount.toString(36);
}
