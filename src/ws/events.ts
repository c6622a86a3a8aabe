import type { WsAckCode, WsErrorCode } from './errors.js';

/** Where a connection is in its life; it only moves forward. */
export type ConnectionState = 'handshake' | 'open' | 'closed';

/**
 * What a gateway reports through `onEvent`. Every state change of a connection is one `state`
 * event, emitted from one place (Connection.transition), so a metrics layer sees each once.
 */
export type GatewayEvent =
  | {
      readonly type: 'state';
      /** This node's number for the connection. */
      readonly connection: number;
      readonly state: ConnectionState;
      readonly user?: string;
      readonly session?: string;
      /** `open`: the handshake's answers. */
      readonly continued?: boolean;
      readonly recovered?: boolean;
      /**
       * `closed`: the error code the node closed it with, or `'CLIENT'` when the client closed it
       * or the socket dropped.
       */
      readonly code?: WsErrorCode | 'CLIENT';
    }
  /** A message decided: its outcome (a duplicate is an outcome sent again, nothing ran). */
  | {
      readonly type: 'message';
      readonly connection: number;
      readonly outcome: 'handled' | 'limited' | 'rejected';
      readonly code?: WsAckCode;
      readonly duplicate: boolean;
    }
  /** An upgrade refused before the WebSocket opened (origin, path, a request it cannot read). */
  | { readonly type: 'refused'; readonly reason: 'origin' | 'path' | 'request'; readonly status: number };
