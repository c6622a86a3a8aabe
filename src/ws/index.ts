/**
 * `onceflow/ws`: the WebSocket protocol of the onceflow gateway, version 1 (docs/ws-protocol.md):
 * the frames both sides send, their bounds, the closed table of error codes, and a parser that
 * checks a frame (size first, then UTF-8, JSON, shape and types) without ever throwing, with the
 * encoders that refuse to write an invalid one. The gateway node and its client build on these.
 * Re-exports only.
 *
 * @module
 */

export type { SendPolicyOptions } from './backpressure.js';
export {
  ACK_CODES,
  type FrameErrorCode,
  isWsErrorCode,
  WS_CODES,
  type WsAckCode,
  type WsCode,
  type WsErrorCode,
} from './errors.js';
export type { ConnectionState, GatewayEvent } from './events.js';
export {
  type ClientAckFrame,
  type ClientFrame,
  type ClientMsgFrame,
  type ErrorFrame,
  encodeClientFrame,
  encodeServerFrame,
  type HelloFrame,
  type JsonValue,
  type ParseResult,
  type PingFrame,
  type PongFrame,
  parseClientFrame,
  parseServerFrame,
  type Resume,
  type ServerAckFrame,
  type ServerFrame,
  type ServerMsgFrame,
  type WelcomeFrame,
  type WelcomeLimits,
} from './frames.js';
export { createGateway, type Gateway } from './gateway.js';
export type { AuthResult, GatewayLimit, GatewayOptions } from './gateway-options.js';
export {
  BodyRefusedError,
  type GatewayMessage,
  type HandlerSpec,
  type Handlers,
  type MessageHandler,
} from './handlers.js';
export { type FrameLimits, WS_LIMITS, WS_SUBPROTOCOL, WS_VERSION } from './limits.js';
export { createPublisher, type Publisher, type PublisherOptions } from './publisher.js';
export type { StreamPosition, UserStreamsOptions } from './user-streams.js';
