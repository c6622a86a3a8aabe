import { InvalidArgumentError } from '../core/errors.js';
import { WS_LIMITS } from './limits.js';

/**
 * The state of client sessions in the store (docs/ws-protocol.md section 3), shared by every node:
 * per session, the next seq expected, the outcomes of the last `maxInFlight` seqs (with their ids),
 * and the writer: the token of the one connection that may record.
 *
 * A connection calls `open` (its token replaces the previous writer's), then per message `begin`
 * and, when `begin` says `run`, runs the handler and calls `record`. `record` is a compare-and-set
 * on the next seq: a second recording of a seq is refused, so two nodes never both record a seq
 * and its outcome never changes once recorded. Only the writer begins, and records.
 *
 * A `begin` that answers `run` takes a lease on that seq for its token, `leaseMs` long: while it
 * is live, the holder may still record that seq (only that one) though a reconnect replaced it as
 * writer, and the new writer's `begin` of the seq answers `busy` (it waits: once the holder
 * records, the seq is `decided`). So a reconnect while a handler runs does not run it twice.
 *
 * What the store cannot give: a handler that ran but whose outcome was not recorded (its node died
 * between `begin` and `record`, or it ran longer than its lease and the new writer ran the seq
 * meanwhile) runs again when the client re-sends the message to the next writer. Such a handler
 * is at least once; one whose effect is one atomic step with the record is exactly once.
 *
 * Every operation refreshes the session's TTL (`sessionTtlMs`), so the state outlives the last
 * operation by that long; once expired, `open` answers `continued: false`, and `begin`/`record`
 * of a connection opened before answer `expired`.
 */
export interface SessionStateStore {
  /** The largest number of outcomes kept per session (and of seqs ahead of the next one). */
  readonly maxInFlight: number;
  /** How long a `begin` that answered `run` holds its seq (see above). */
  readonly leaseMs: number;
  open(ref: SessionRef): Promise<OpenResult>;
  begin(ref: SessionRef, token: string, seq: number, id: string): Promise<BeginResult>;
  record(ref: SessionRef, token: string, seq: number, id: string, outcome: Outcome): Promise<RecordResult>;
  /**
   * Restarts the TTL while the connection is open (the gateway calls it at least every
   * `sessionTtlMs / 2`, e.g. with its heartbeat), so a silent connection's state never expires
   * under it: the TTL counts from the last connection's end.
   */
  touch(ref: SessionRef, token: string): Promise<TouchResult>;
  /**
   * Gives back a seq this token began and will not record (its handler never started): the lease
   * ends, and the next `begin` of the seq is a first run, not `again`. Nothing changes when the
   * lease is not this token's on `seq`. Answers whether it released.
   */
  release(ref: SessionRef, token: string, seq: number): Promise<boolean>;
}

export type TouchResult = { readonly kind: 'touched' | 'replaced' | 'expired' };

/** A session is the user's: the same session string under another user is another session. */
export interface SessionRef {
  readonly user: string;
  readonly session: string;
}

/** For `welcome`: `continued` when the state existed; `nextSeq - 1` is the highest seq with an outcome. */
export interface OpenResult {
  readonly continued: boolean;
  readonly nextSeq: number;
  /** This connection's writer token: `begin` and `record` take it; the next `open` replaces it. */
  readonly token: string;
}

export type Outcome =
  | { readonly outcome: 'handled' }
  | { readonly outcome: 'limited'; readonly code: 'RATE_LIMITED'; readonly retryAfterMs: number }
  | {
      readonly outcome: 'rejected';
      readonly code: 'UNKNOWN_TYPE' | 'BODY_REFUSED' | 'HANDLER_FAILED';
    };

export type BeginResult =
  /** `seq` is the next one and `id` is new: run the handler, then `record`. */
  /**
   * `again`: an earlier `begin` of this seq (another connection's, whose lease ran out) answered
   * `run` and nothing was recorded: its handler may have run, and its limits may have been charged.
   */
  | { readonly kind: 'run'; readonly again?: true }
  /** `seq` has an outcome under this `id`: send it again, marked duplicate. */
  | { readonly kind: 'decided'; readonly outcome: Outcome; readonly duplicate: true }
  /**
   * `seq` is the next one, and another connection's lease on it is live (its handler runs): ask
   * again, at the latest after `retryAfterMs` (when the lease runs out). Nothing changed.
   */
  | { readonly kind: 'busy'; readonly retryAfterMs: number }
  /** `seq` is past the next one, within `maxInFlight`: it waits for the gap. */
  | { readonly kind: 'ahead' }
  /** `seq` is more than `maxInFlight` past the last seq with an outcome (TOO_MANY_IN_FLIGHT). */
  | { readonly kind: 'too-far' }
  /** `seq` has an outcome under another id, or `id` one under another seq (BAD_SEQ). */
  | { readonly kind: 'conflict' }
  /** `seq` is older than the kept outcomes: a client that follows the protocol holds its ack (BAD_SEQ). */
  | { readonly kind: 'forgotten' }
  /** Another connection opened the session since (SESSION_REPLACED). */
  | { readonly kind: 'replaced' }
  /** The session's state expired since this connection opened it. */
  | { readonly kind: 'expired' };

export type RecordResult =
  | { readonly kind: 'recorded' }
  /** `seq` is not the next one (already recorded, or a gap): nothing changed. */
  | { readonly kind: 'stale' }
  /** The token is not the writer's, nor does it hold a live lease on `seq`: nothing changed. */
  | { readonly kind: 'replaced' }
  | { readonly kind: 'expired' };

const ID = /^[A-Za-z0-9._:-]+$/;
const SESSION = /^[A-Za-z0-9_-]+$/;

/**
 * Whether `text` is over `max` UTF-8 bytes. A UTF-16 unit is at most 3 bytes (a surrogate pair, 2
 * units, is 4), so a string of at most max / 3 units is never counted: the per-message checks of
 * a usual short user id cost no byte count.
 */
function tooManyBytes(text: string, max: number): boolean {
  return text.length * 3 > max && Buffer.byteLength(text, 'utf8') > max;
}

/** Refuses a bad ref, token, seq, id or outcome with a typed error naming it; nothing is read or written. */
export function checkRef(ref: SessionRef): void {
  if (typeof ref !== 'object' || ref === null) throw new InvalidArgumentError('ref', 'an object', ref);
  const { user, session } = ref;
  if (typeof user !== 'string' || user.length === 0 || tooManyBytes(user, WS_LIMITS.userBytes))
    throw new InvalidArgumentError('ref.user', `a string of 1-${WS_LIMITS.userBytes} bytes`, user);
  if (
    typeof session !== 'string' ||
    session.length < WS_LIMITS.sessionMinBytes ||
    session.length > WS_LIMITS.sessionBytes ||
    !SESSION.test(session)
  )
    throw new InvalidArgumentError(
      'ref.session',
      `${WS_LIMITS.sessionMinBytes}-${WS_LIMITS.sessionBytes} of [A-Za-z0-9_-]`,
      session,
    );
}

/** A token is what `open` returned: a randomUUID (36 characters); 64 bounds what a caller can make the store compare. */
export function checkToken(token: string): void {
  if (typeof token !== 'string' || token.length === 0 || token.length > 64)
    throw new InvalidArgumentError('token', 'the token `open` returned', token);
}

export function checkMessage(token: string, seq: number, id: string): void {
  checkToken(token);
  if (!Number.isSafeInteger(seq) || seq < 1)
    throw new InvalidArgumentError('seq', 'an integer 1 to 2^53 - 1', seq);
  if (typeof id !== 'string' || id.length > WS_LIMITS.idBytes || !ID.test(id))
    throw new InvalidArgumentError('id', `1-${WS_LIMITS.idBytes} of [A-Za-z0-9._:-]`, id);
}

export function checkOutcome(outcome: Outcome): void {
  const o = outcome as { outcome?: unknown; code?: unknown; retryAfterMs?: unknown };
  const ok =
    typeof o === 'object' &&
    o !== null &&
    ((o.outcome === 'handled' && o.code === undefined && o.retryAfterMs === undefined) ||
      (o.outcome === 'limited' &&
        o.code === 'RATE_LIMITED' &&
        Number.isSafeInteger(o.retryAfterMs) &&
        (o.retryAfterMs as number) >= 0) ||
      (o.outcome === 'rejected' &&
        (o.code === 'UNKNOWN_TYPE' || o.code === 'BODY_REFUSED' || o.code === 'HANDLER_FAILED') &&
        o.retryAfterMs === undefined));
  if (!ok)
    throw new InvalidArgumentError(
      'outcome',
      'handled, limited (RATE_LIMITED, retryAfterMs) or rejected (a code)',
      outcome,
    );
}

/** One text per outcome, as both stores keep it: `h`, `l:<retryAfterMs>`, `r:<code>`. */
export function encodeOutcome(o: Outcome): string {
  if (o.outcome === 'handled') return 'h';
  if (o.outcome === 'limited') return `l:${o.retryAfterMs}`;
  return `r:${o.code}`;
}

export function decodeOutcome(text: string): Outcome {
  if (text === 'h') return { outcome: 'handled' };
  if (text.startsWith('l:'))
    return { outcome: 'limited', code: 'RATE_LIMITED', retryAfterMs: Number(text.slice(2)) };
  if (text.startsWith('r:')) {
    const code = text.slice(2);
    if (code === 'UNKNOWN_TYPE' || code === 'BODY_REFUSED' || code === 'HANDLER_FAILED')
      return { outcome: 'rejected', code };
  }
  throw new Error(`unreadable outcome in the session state: ${JSON.stringify(text)}`);
}

/**
 * A lease is a handler's expected bound: handlers are one application step (a write, a call), well
 * under a second; 30 s is the usual request timeout of HTTP servers and proxies, past which a
 * handler is stuck rather than slow. A re-send waits behind a live lease, so its length is how
 * long a client may wait for an ack after a reconnect: 10 min at most (the largest heartbeat). At
 * least 100 ms: shorter than a store round trip on a loaded node would expire as it is taken.
 */
export const LEASE_MS = Object.freeze({ default: 30_000, min: 100, max: 600_000 });

// The shortest session state: it must outlive a dropped connection until the client's re-send on
// its next connection (a first reconnect backoff of ~100 ms-1 s plus a handshake); shorter, a
// client that reconnects at once would still find its state gone and its unacked frames unknown.
const MIN_SESSION_TTL_MS = 1000;

/** The store options both stores share, checked the same way; returns the lease (defaulted). */
export function checkStoreLimits(maxInFlight: unknown, sessionTtlMs: unknown, leaseMs?: unknown): number {
  if (
    leaseMs !== undefined &&
    (!Number.isSafeInteger(leaseMs) ||
      (leaseMs as number) < LEASE_MS.min ||
      (leaseMs as number) > LEASE_MS.max)
  )
    throw new InvalidArgumentError('leaseMs', `an integer ${LEASE_MS.min}-${LEASE_MS.max} (ms)`, leaseMs);
  if (
    !Number.isSafeInteger(maxInFlight) ||
    (maxInFlight as number) < 1 ||
    (maxInFlight as number) > WS_LIMITS.maxInFlightCap
  )
    throw new InvalidArgumentError('maxInFlight', `an integer 1-${WS_LIMITS.maxInFlightCap}`, maxInFlight);
  if (
    !Number.isSafeInteger(sessionTtlMs) ||
    (sessionTtlMs as number) < MIN_SESSION_TTL_MS ||
    (sessionTtlMs as number) > WS_LIMITS.maxSessionTtlMs
  )
    throw new InvalidArgumentError(
      'sessionTtlMs',
      `an integer ${MIN_SESSION_TTL_MS}-${WS_LIMITS.maxSessionTtlMs} (ms)`,
      sessionTtlMs,
    );
  return (leaseMs as number | undefined) ?? LEASE_MS.default;
}
