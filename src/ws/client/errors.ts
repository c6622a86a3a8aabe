import type { WsErrorCode } from '../errors.js';
import type { ErrorFrame, Resume } from '../frames.js';

/**
 * The codes of {@link WsClientError}: a code of the server's `error` frame (the connection
 * ended for that reason), or one of the client's own:
 * - `UNKNOWN_OUTCOME`: a sent message's fate is unknown: the server no longer held the session
 *   (`welcome.continued` false) when the client came back with it unacked. It may have run.
 * - `CLOSED`: the client was closed (or gave up reconnecting) before the message's ack arrived;
 *   `outcome` says whether it was ever sent.
 * - `QUEUE_FULL`: `maxQueued` messages already wait to be sent; nothing was queued.
 * - `TRANSPORT`: the WebSocket failed or closed without an `error` frame (`closeCode` says how).
 * - `PROTOCOL`: the server sent a frame this client refuses (the message says which and why).
 * - `TIMEOUT`: no `welcome` within `connectTimeoutMs`, or the server fell silent for
 *   `2 x heartbeatMs + 5 s`.
 * - `TOKEN`: the `token` function threw or rejected (`cause`).
 * - `LISTENER`: an event listener threw (`cause`); the client carried on.
 */
export type WsClientErrorCode =
  | WsErrorCode
  | 'UNKNOWN_OUTCOME'
  | 'CLOSED'
  | 'QUEUE_FULL'
  | 'TRANSPORT'
  | 'PROTOCOL'
  | 'TIMEOUT'
  | 'TOKEN'
  | 'LISTENER';

/** What {@link WsClientError} may carry besides its code and message. */
export interface WsClientErrorDetails {
  readonly cause?: unknown;
  readonly closeCode?: number;
  readonly frame?: ErrorFrame;
  readonly resume?: Resume;
  readonly retryAfterMs?: number;
  readonly outcome?: 'unknown' | 'not-sent';
}

/**
 * What the client reports through its `error` event and the rejections of `send()`. Check it by
 * `code` (two copies of the package in one process break `instanceof`), with
 * {@link isWsClientError}.
 */
export class WsClientError extends Error {
  override readonly name = 'WsClientError' as const;
  readonly code: WsClientErrorCode;
  /** The WebSocket close code, when a connection ended. */
  declare readonly closeCode?: number;
  /** The server's `error` frame, when one came before the close. */
  declare readonly frame?: ErrorFrame;
  /** The position the server said to resume from (`error.resume`). */
  declare readonly resume?: Resume;
  declare readonly retryAfterMs?: number;
  /** For a rejected `send()`: `'unknown'` it was sent and may have run; `'not-sent'` it never left the client. */
  declare readonly outcome?: 'unknown' | 'not-sent';

  constructor(code: WsClientErrorCode, message: string, details: WsClientErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    if (details.closeCode !== undefined) this.closeCode = details.closeCode;
    if (details.frame !== undefined) this.frame = details.frame;
    if (details.resume !== undefined) this.resume = details.resume;
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs;
    if (details.outcome !== undefined) this.outcome = details.outcome;
  }

  /** `WsClientError [UNKNOWN_OUTCOME]: ...`, like the package's other errors. */
  override toString(): string {
    return `${this.name} [${this.code}]: ${this.message}`;
  }
}

/** `err` is a {@link WsClientError} (of `code`, when given), judged by its name and code. */
export function isWsClientError(err: unknown, code?: WsClientErrorCode): err is WsClientError {
  return (
    typeof err === 'object' &&
    err !== null &&
    (err as { name?: unknown }).name === 'WsClientError' &&
    typeof (err as { code?: unknown }).code === 'string' &&
    (code === undefined || (err as { code: unknown }).code === code)
  );
}
