import type { IncomingMessage } from 'node:http';
import type { Emit } from '../core/observer.js';
import type { Limiter } from '../limiter/types.js';
import type { SendPolicyOptions } from './backpressure.js';
import type { WsErrorCode } from './errors.js';
import type { GatewayEvent } from './events.js';
import type { AuthResult, ResolvedGatewayOptions } from './gateway-options.js';
import type { Heartbeat } from './heartbeat.js';
import type { LiveFeed } from './live-feed.js';
import type { SessionRef, SessionStateStore } from './session-state.js';
import type { UserStreams } from './user-streams.js';

/** What the node needs of a connection (connection.ts). */
export interface NodeMember {
  readonly ref: SessionRef | undefined;
  fail(code: WsErrorCode, message: string): void;
}

/**
 * What a connection needs of its node, and the node's bookkeeping of its connections: the caps
 * (per node, per user) and the one writer per session this node can see at once (a session's
 * other connections on other nodes learn it from the store's writer token).
 */
export class GatewayNode<C extends NodeMember> {
  readonly connections = new Set<C>();
  private readonly perUser = new Map<string, number>();
  private readonly bySession = new Map<string, C>();
  // Connections counted in their user's cap (admitted, not yet released): a connection refused by
  // the cap was never counted, and its release must not uncount another's.
  private readonly counted = new WeakSet<C>();

  constructor(
    readonly o: ResolvedGatewayOptions,
    readonly sessions: SessionStateStore,
    readonly streams: UserStreams,
    readonly live: LiveFeed,
    readonly limiter: Limiter | undefined,
    readonly heartbeat: Heartbeat<C>,
    readonly sendOptions: SendPolicyOptions,
    readonly auth: (token: string | undefined, request: IncomingMessage) => AuthResult | Promise<AuthResult>,
    private readonly observer: Emit<GatewayEvent> | undefined,
  ) {}

  /** Reports `event` to the gateway's observer (observing() keeps its throws from ending anything). */
  emit(event: GatewayEvent): void {
    if (this.observer !== undefined) this.observer(event);
  }

  /**
   * Counts an authenticated connection against its user's cap; a connection of the same session
   * already here is ended (SESSION_REPLACED). Returns why it is refused, or undefined.
   */
  admit(c: C): string | undefined {
    const ref = c.ref;
    if (ref === undefined) return 'no session';
    const key = sessionKey(ref.user, ref.session);
    const before = this.bySession.get(key);
    if (before !== undefined && before !== c)
      before.fail('SESSION_REPLACED', 'a newer connection took this session');
    const count = this.perUser.get(ref.user) ?? 0;
    if (count >= this.o.maxConnectionsPerUser)
      return `the user holds ${count} connections on this node (maxConnectionsPerUser)`;
    this.perUser.set(ref.user, count + 1);
    this.bySession.set(key, c);
    this.counted.add(c);
    return undefined;
  }

  /** Forgets a closed connection. */
  release(c: C): void {
    this.connections.delete(c);
    if (!this.counted.delete(c) || c.ref === undefined) return;
    const { user, session } = c.ref;
    const left = (this.perUser.get(user) ?? 1) - 1;
    if (left <= 0) this.perUser.delete(user);
    else this.perUser.set(user, left);
    const key = sessionKey(user, session);
    if (this.bySession.get(key) === c) this.bySession.delete(key);
  }
}

function sessionKey(user: string, session: string): string {
  return `${session}\n${user}`;
}
