/**
 * The closed table of codes of the WebSocket protocol (docs/ws-protocol.md, "Error codes").
 * A code is sent one of two ways:
 * - `error`: an `error` frame, then the WebSocket closes with `close` (the connection ends; the
 *   client session, its seq and its resume position, live on);
 * - `ack`: the code of a server `ack` whose outcome is `limited` or `rejected` (the connection
 *   stays open; the message's seq and id are spent, with that outcome).
 * A test checks this table against the document's, row by row.
 */
export const WS_CODES = Object.freeze({
  FRAME_TOO_LARGE: { sentAs: 'error', close: 1009 },
  BAD_ENCODING: { sentAs: 'error', close: 1008 },
  NOT_JSON: { sentAs: 'error', close: 1008 },
  BAD_FRAME: { sentAs: 'error', close: 1008 },
  UNKNOWN_FIELD: { sentAs: 'error', close: 1008 },
  FORBIDDEN_KEY: { sentAs: 'error', close: 1008 },
  TOO_DEEP: { sentAs: 'error', close: 1008 },
  BAD_VERSION: { sentAs: 'error', close: 1008 },
  UNEXPECTED_FRAME: { sentAs: 'error', close: 1008 },
  AUTH_FAILED: { sentAs: 'error', close: 1008 },
  BAD_SEQ: { sentAs: 'error', close: 1008 },
  TOO_MANY_IN_FLIGHT: { sentAs: 'error', close: 1008 },
  BAD_ACK: { sentAs: 'error', close: 1008 },
  SESSION_REPLACED: { sentAs: 'error', close: 1008 },
  TOO_MANY_CONNECTIONS: { sentAs: 'error', close: 1013 },
  SLOW_CONSUMER: { sentAs: 'error', close: 1013 },
  HEARTBEAT_TIMEOUT: { sentAs: 'error', close: 1013 },
  DRAINING: { sentAs: 'error', close: 1001 },
  INTERNAL: { sentAs: 'error', close: 1011 },
  RATE_LIMITED: { sentAs: 'ack', close: null },
  UNKNOWN_TYPE: { sentAs: 'ack', close: null },
  BODY_REFUSED: { sentAs: 'ack', close: null },
  HANDLER_FAILED: { sentAs: 'ack', close: null },
} as const);

export type WsCode = keyof typeof WS_CODES;
/** A code sent in an `error` frame: the connection closes after it. */
export type WsErrorCode = {
  [C in WsCode]: (typeof WS_CODES)[C]['sentAs'] extends 'error' ? C : never;
}[WsCode];
/** A code sent in an `ack`: the message is spent, the connection stays open. */
export type WsAckCode = Exclude<WsCode, WsErrorCode>;

/** The codes a frame parser returns: what is wrong with one frame's bytes, whoever sent it. */
export type FrameErrorCode =
  | 'FRAME_TOO_LARGE'
  | 'BAD_ENCODING'
  | 'NOT_JSON'
  | 'BAD_FRAME'
  | 'UNKNOWN_FIELD'
  | 'FORBIDDEN_KEY'
  | 'TOO_DEEP'
  | 'BAD_VERSION';

export function isWsErrorCode(value: unknown): value is WsErrorCode {
  return (
    typeof value === 'string' &&
    Object.hasOwn(WS_CODES, value) &&
    WS_CODES[value as WsCode].sentAs === 'error'
  );
}

/** The ack codes of each outcome: `limited` has one, `rejected` the others. */
export const ACK_CODES = Object.freeze({
  limited: Object.freeze(['RATE_LIMITED'] as const),
  rejected: Object.freeze(['UNKNOWN_TYPE', 'BODY_REFUSED', 'HANDLER_FAILED'] as const),
});
