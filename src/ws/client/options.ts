import { type Duration, parseDuration } from '../../core/duration.js';
import { InvalidOptionError } from '../../core/errors.js';
import { keysOf, knownKeys } from '../../core/validate.js';
import type { Resume } from '../frames.js';
import { WS_LIMITS } from '../limits.js';
import { randomId } from './random-id.js';

/**
 * A WebSocket constructor: the browser's `WebSocket`, or `WebSocket` from the `ws` package on
 * Node 20 (which has no global one). Only the standard surface is used: `onopen`, `onmessage`,
 * `onclose`, `onerror`, `send(string)`, `close(code, reason)`, `readyState`, `protocol`.
 */
export type WebSocketConstructor = new (url: string, protocols: string[]) => object;

/** Reconnect timing: full-jitter exponential backoff between `minMs` and `maxMs`. */
export interface ReconnectOptions {
  /** The ceiling of the first wait (default 250 ms): quick enough that a blip goes unnoticed. */
  readonly minMs?: Duration;
  /**
   * The ceiling of any wait (default 10 s): a user waits at most that long after the server is
   * back, and a fleet of clients spreads over that window instead of arriving in one wave.
   */
  readonly maxMs?: Duration;
}

/** The options of {@link createClient}. Unknown keys are refused, naming the likely typo. */
export interface ClientOptions {
  /** The gateway's URL, `ws://` or `wss://`. */
  readonly url: string | URL;
  /** A WebSocket constructor; default `globalThis.WebSocket` (browsers). On Node 20 pass `ws`'s. */
  readonly WebSocket?: WebSocketConstructor;
  /** Sent in `hello`; a function is called before every connect (a fresh token each time). */
  readonly token?: string | (() => string | Promise<string>);
  /** The client session (16-64 of `[A-Za-z0-9_-]`); default 22 random base64url characters. */
  readonly session?: string;
  /** Where to start reading the user's stream: the last position processed (e.g. saved in localStorage). */
  readonly resume?: Resume;
  /** Backoff between reconnects, or `false` to stay closed after the first drop. */
  readonly reconnect?: false | ReconnectOptions;
  /** Messages sent and not yet acked, at most (default 64, 1-1024); also kept within `welcome.limits.maxInFlight`. */
  readonly maxInFlight?: number;
  /** Messages waiting to be sent, at most (default 1000, up to 1 000 000); beyond, `send()` rejects `QUEUE_FULL`. */
  readonly maxQueued?: number;
  /** How long a connect may take, from opening the socket to `welcome` (default 15 s). */
  readonly connectTimeoutMs?: Duration;
  /** The source of backoff jitter, in [0, 1); default `Math.random`. */
  readonly random?: () => number;
}

export interface ResolvedOptions {
  readonly url: string;
  readonly WebSocket: WebSocketConstructor;
  readonly token: (() => string | Promise<string>) | undefined;
  readonly session: string;
  readonly resume: Resume | undefined;
  readonly reconnect: { readonly minMs: number; readonly maxMs: number } | false;
  readonly maxInFlight: number;
  readonly maxQueued: number;
  readonly connectTimeoutMs: number;
  readonly random: () => number;
}

const KEYS = keysOf<ClientOptions>({
  url: true,
  WebSocket: true,
  token: true,
  session: true,
  resume: true,
  reconnect: true,
  maxInFlight: true,
  maxQueued: true,
  connectTimeoutMs: true,
  random: true,
});

// 64: what a gateway announces by default (docs/ws-protocol.md's welcome): enough to keep a
// pipe busy at ~1 ms per handler over a 60 ms round trip, while the server keeps 64 outcomes.
const DEFAULT_MAX_IN_FLIGHT = 64;
// 1000 messages of chat-sized frames (~0.5 KB) is ~0.5 MB; a full queue of 64 KiB frames is
// 64 MiB, so the cap of one million (64 GiB worst case) is for small frames only.
const DEFAULT_MAX_QUEUED = 1000;
const MAX_QUEUED_CAP = 1_000_000;
// A connect is a TCP and TLS handshake (a few round trips, seconds each on a bad mobile link)
// plus one store round trip for the welcome: 15 s covers that with margin, and a server that
// took the socket but never answers is left for another attempt within it.
const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;
const DEFAULT_MIN_MS = 250;
const DEFAULT_MAX_MS = 10_000;

const SESSION = /^[A-Za-z0-9_-]{16,64}$/;
const EPOCH = /^[A-Za-z0-9_-]{1,64}$/;

export function resolveOptions(options: ClientOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidOptionError('options', 'an object with at least `url`', options);
  }
  knownKeys('', options, KEYS);
  const { url } = options;
  const text = url instanceof URL ? url.href : url;
  if (typeof text !== 'string' || !/^wss?:\/\/./i.test(text)) {
    throw new InvalidOptionError('url', 'a ws:// or wss:// URL', url);
  }
  const WebSocket =
    options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket ?? undefined;
  if (typeof WebSocket !== 'function') {
    throw new InvalidOptionError(
      'WebSocket',
      options.WebSocket === undefined
        ? "a WebSocket constructor: there is no globalThis.WebSocket here (on Node 20 pass `WebSocket` from the 'ws' package)"
        : 'a WebSocket constructor',
      options.WebSocket,
    );
  }
  const { token } = options;
  if (token !== undefined && typeof token !== 'function' && (typeof token !== 'string' || token === '')) {
    throw new InvalidOptionError('token', 'a non-empty string or a function returning one', token);
  }
  let session = options.session;
  if (session === undefined) {
    session = randomId();
    if (session === undefined) {
      throw new InvalidOptionError(
        'session',
        'given, since there is no globalThis.crypto.getRandomValues to draw one',
        undefined,
      );
    }
  } else if (typeof session !== 'string' || !SESSION.test(session)) {
    throw new InvalidOptionError('session', '16-64 characters of [A-Za-z0-9_-]', session);
  }
  const resume = options.resume;
  if (resume !== undefined) {
    if (typeof resume !== 'object' || resume === null) {
      throw new InvalidOptionError('resume', 'an object { offset, epoch }', resume);
    }
    knownKeys('resume', resume, ['offset', 'epoch']);
    if (!Number.isSafeInteger(resume.offset) || resume.offset < 0) {
      throw new InvalidOptionError('resume.offset', 'a non-negative safe integer', resume.offset);
    }
    if (typeof resume.epoch !== 'string' || !EPOCH.test(resume.epoch)) {
      throw new InvalidOptionError('resume.epoch', '1-64 characters of [A-Za-z0-9_-]', resume.epoch);
    }
  }
  const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
  if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 1 || maxInFlight > WS_LIMITS.maxInFlightCap) {
    throw new InvalidOptionError(
      'maxInFlight',
      `an integer from 1 to ${WS_LIMITS.maxInFlightCap}`,
      maxInFlight,
    );
  }
  const maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
  if (!Number.isSafeInteger(maxQueued) || maxQueued < 1 || maxQueued > MAX_QUEUED_CAP) {
    throw new InvalidOptionError('maxQueued', `an integer from 1 to ${MAX_QUEUED_CAP}`, maxQueued);
  }
  const random = options.random ?? Math.random;
  if (typeof random !== 'function') throw new InvalidOptionError('random', 'a function', random);
  const connectTimeoutMs = parseDuration(
    options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    'connectTimeoutMs',
  );
  if (connectTimeoutMs < 1)
    throw new InvalidOptionError('connectTimeoutMs', 'at least 1 ms', connectTimeoutMs);
  return {
    url: text,
    WebSocket,
    token: token === undefined ? undefined : typeof token === 'string' ? () => token : token,
    session,
    resume: resume === undefined ? undefined : { offset: resume.offset, epoch: resume.epoch },
    reconnect: reconnectOf(options.reconnect),
    maxInFlight,
    maxQueued,
    connectTimeoutMs,
    random,
  };
}

function reconnectOf(value: ClientOptions['reconnect']): ResolvedOptions['reconnect'] {
  if (value === false) return false;
  if (value === undefined) return { minMs: DEFAULT_MIN_MS, maxMs: DEFAULT_MAX_MS };
  if (typeof value !== 'object' || value === null) {
    throw new InvalidOptionError('reconnect', 'false or an object { minMs, maxMs }', value);
  }
  knownKeys('reconnect', value, ['minMs', 'maxMs']);
  const minMs = parseDuration(value.minMs ?? DEFAULT_MIN_MS, 'reconnect.minMs');
  const maxMs = parseDuration(value.maxMs ?? Math.max(DEFAULT_MAX_MS, minMs), 'reconnect.maxMs');
  if (minMs < 1) throw new InvalidOptionError('reconnect.minMs', 'at least 1 ms', minMs);
  if (maxMs < minMs)
    throw new InvalidOptionError('reconnect.maxMs', `at least reconnect.minMs (${minMs})`, maxMs);
  return { minMs, maxMs };
}
