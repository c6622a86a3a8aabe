import { WS_CODES } from '../errors.js';
import type { ErrorFrame } from '../frames.js';

/** What the client does after a connection ended, by docs/ws-protocol.md section 6. */
export type AfterClose =
  | { readonly action: 'stop' }
  | { readonly action: 'reconnect'; readonly at: 'once' }
  | { readonly action: 'reconnect'; readonly at: 'backoff'; readonly atLeastMs: number };

/**
 * The close code that counts is the error frame's (its row of the code table) when one came
 * first, else the WebSocket's own. 1008 (policy) and 1009 (frame too large): the same token or
 * frame would be refused again, so stop. 1001 (draining): at once, the load balancer picks another
 * node. Anything else (1011, 1013, a dropped TCP connection, a close without a code): backoff,
 * waiting at least the error frame's `retryAfterMs`.
 */
export function afterClose(frame: ErrorFrame | undefined, closeCode: number): AfterClose {
  const code = frame ? WS_CODES[frame.code].close : closeCode;
  if (code === 1008 || code === 1009) return { action: 'stop' };
  if (code === 1001) return { action: 'reconnect', at: 'once' };
  return { action: 'reconnect', at: 'backoff', atLeastMs: frame?.retryAfterMs ?? 0 };
}
