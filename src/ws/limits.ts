/** The WebSocket subprotocol a client asks for (`Sec-WebSocket-Protocol`) and the server selects. */
export const WS_SUBPROTOCOL = 'onceflow.v1';
/** The protocol version in `hello` and `welcome`: a client that cannot offer the subprotocol still says it. */
export const WS_VERSION = 1;

/**
 * The bounds of the protocol's frames, in UTF-8 bytes where a size is given (what crosses the
 * wire; a JavaScript string's `length` counts UTF-16 units). docs/ws-protocol.md ("Bounds")
 * repeats them for implementers in other languages.
 */
export const WS_LIMITS = Object.freeze({
  /**
   * A frame's text. A chat line or a game action is ~100-500 bytes with its envelope; 64 KiB holds
   * a small document or a page of a list. A node parses a frame synchronously on its one event
   * loop: JSON.parse reads ~200-400 MB/s, so 64 KiB costs ~0.2-0.3 ms, and one client cannot stall
   * the node's other connections for long (`ws` would accept 100 MiB by default). The server may
   * announce a smaller bound in `welcome`; never a larger one than it parses.
   */
  maxFrameBytes: 65_536,
  /**
   * Containers nested in a `body` (a scalar has depth 0, `{"a":[1]}` depth 2). Application
   * payloads nest under ~10; 32 bounds every later recursive walk of a body (validation, copy, a
   * decoder in another language with a small stack) far below any stack limit.
   */
  maxBodyDepth: 32,
  /**
   * A message `id`, charset `[A-Za-z0-9._:-]`. A UUID is 36 bytes, a ULID 26; 128 leaves room for
   * a composite `device:session:n`. The store keeps up to `maxInFlight` ids per session in its
   * dedup window: 64 x 128 bytes = 8 KiB per session at worst.
   */
  idBytes: 128,
  /**
   * A message `type`, `[A-Za-z][A-Za-z0-9._:-]*`. Types are names (`chat.send`, `room:join`);
   * 64 leaves room for namespaces. A type is a part of a limiter key and a metric label, so its
   * charset is one that is safe in both.
   */
  typeBytes: 64,
  /**
   * A client `session`, `[A-Za-z0-9_-]`, 16 to 64 bytes. A client draws >= 96 random bits
   * (16 base64url characters); 22 characters carry 128 bits. Longer than 64 only costs store bytes.
   */
  sessionMinBytes: 16,
  sessionBytes: 64,
  /** An `epoch`, `[A-Za-z0-9_-]`: the server's unique id of a stream's life, 64 like a session. */
  epochBytes: 64,
  /** A `user` id in `welcome`: the same bound as a ledger owner (LIMITS.ownerBytes), 256. */
  userBytes: 256,
  /** An auth `token`: a JWT is ~0.5-2 KB; 8 KiB is the header bound of most HTTP servers. */
  tokenBytes: 8192,
  /** An error frame's `message`: one sentence for a human, 1 KiB holds it with the values it names. */
  messageBytes: 1024,
  /**
   * The largest `maxInFlight` a server may announce: the store keeps that many outcomes per
   * session and the server buffers that many frames to reorder; 1024 x 64 KiB bounds the reorder
   * buffer of one connection to 64 MiB at the very worst, which a server lowers per deployment.
   */
  maxInFlightCap: 1024,
  /**
   * `heartbeatMs` a server may announce: 1 s to 10 min. Below 1 s pings cost more than the
   * traffic they watch; above 10 min most load balancers (AWS ALB: 60 s idle by default, at most
   * 4000 s) drop the idle connection before the heartbeat notices.
   */
  minHeartbeatMs: 1000,
  maxHeartbeatMs: 600_000,
  /** `sessionTtlMs` a server may announce: up to 7 days, the longest a client plausibly stays away and still holds unacked frames. */
  maxSessionTtlMs: 604_800_000,
});

/** The bounds a parser applies; each defaults to {@link WS_LIMITS}. */
export interface FrameLimits {
  /** At most {@link WS_LIMITS.maxFrameBytes}: a larger frame is refused before JSON.parse. */
  readonly maxFrameBytes?: number;
  /** At most {@link WS_LIMITS.maxBodyDepth}. */
  readonly maxBodyDepth?: number;
}
