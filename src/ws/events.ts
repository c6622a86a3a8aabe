import type { ObservedDecisionReason } from '../core/observer.js';
import type { WsAckCode, WsErrorCode } from './errors.js';

/** Where a connection is in its life; it only moves forward. */
export type ConnectionState = 'handshake' | 'open' | 'closed';

/**
 * What a gateway reports through its `observer`: events of the part `gateway` in onceflow's one
 * event table (docs/observability.md). Every state change of a connection is one `state` event,
 * emitted from one place (Connection.transition), so a metrics layer sees each once.
 */
export type GatewayEvent =
  | {
      readonly part: 'gateway';
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
      readonly part: 'gateway';
      readonly type: 'message';
      readonly connection: number;
      readonly outcome: 'handled' | 'limited' | 'rejected';
      readonly code?: WsAckCode;
      readonly duplicate: boolean;
    }
  /**
   * The gateway's limits decided a message (one event per take, before its outcome): `blocked`
   * when this node's block cache refused it without asking the store (the node's local view, a
   * key the store refused earlier and whose wait has not run out); every other reason is the
   * store's answer (the gateway's limiter has no degraded policy: a failing store fails the
   * message with INTERNAL and no decision).
   */
  | {
      readonly part: 'gateway';
      readonly type: 'limit';
      readonly connection: number;
      readonly reason: ObservedDecisionReason;
    }
  /**
   * A heartbeat verdict that involved this node's own time: `dropped` (closed HEARTBEAT_TIMEOUT
   * right after), or `spared`, a false timeout suppressed: the connection's silence passed the
   * heartbeat timeout on the monotonic clock but not in the node's awake time, and the client then
   * spoke. `stalledMs`: the node's own event-loop stalls discounted from that silence.
   */
  | {
      readonly part: 'gateway';
      readonly type: 'heartbeat';
      readonly connection: number;
      readonly verdict: 'dropped' | 'spared';
      readonly stalledMs: number;
    }
  /** An upgrade refused before the WebSocket opened (origin, path, a request it cannot read). */
  | {
      readonly part: 'gateway';
      readonly type: 'refused';
      readonly reason: 'origin' | 'path' | 'request';
      readonly status: number;
    };
