/**
 * `onceflow/ws/client`: the client of the onceflow gateway's WebSocket protocol
 * (docs/ws-protocol.md), for browsers and Node (pass `WebSocket` from the `ws` package on Node 20).
 * One session across reconnects; each sent message gets exactly one outcome, re-sent unchanged
 * after a reconnect until acked; each server message is delivered once, in offset order, resumed
 * from the last one processed. No Node builtins: it bundles for the browser as it is. Guide:
 * docs/ws-client.md. Re-exports only.
 *
 * @module
 */

export type { Resume, WelcomeFrame } from '../frames.js';
export {
  type Client,
  type ClientEvents,
  type ClientState,
  createClient,
  type SendOptions,
  type ServerMessage,
} from './client.js';
export {
  isWsClientError,
  WsClientError,
  type WsClientErrorCode,
  type WsClientErrorDetails,
} from './errors.js';
export type { ClientOptions, ReconnectOptions, WebSocketConstructor } from './options.js';
export type { SendResult, UnknownMessage } from './outbox.js';
