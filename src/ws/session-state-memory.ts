import { randomUUID } from 'node:crypto';
import { knownKeys } from '../core/validate.js';
import {
  type BeginResult,
  checkMessage,
  checkOutcome,
  checkRef,
  checkStoreLimits,
  checkToken,
  decodeOutcome,
  encodeOutcome,
  type OpenResult,
  type Outcome,
  type RecordResult,
  type SessionRef,
  type SessionStateStore,
  type TouchResult,
} from './session-state.js';

export interface MemorySessionStateOptions {
  readonly maxInFlight: number;
  readonly sessionTtlMs: number;
  /** How long a `begin` that answered `run` holds its seq; `LEASE_MS` bounds it and its default. */
  readonly leaseMs?: number;
  /** The clock the TTL and leases are read on; tests move it. */
  readonly now?: () => number;
}

interface State {
  next: number;
  writer: string;
  expiresAt: number;
  /** seq -> [id, encoded outcome], the last `maxInFlight` seqs. */
  outcomes: Map<number, [string, string]>;
  /** id -> seq, for the same seqs. */
  ids: Map<string, number>;
  /** The lease of the last `begin` that answered `run`, if not recorded since. */
  lease: { seq: number; token: string; until: number } | undefined;
}

/**
 * The session state of one process: for a single node, and the reference model the Redis store is
 * tested against (the two answer the same on every sequence of operations).
 */
export class MemorySessionState implements SessionStateStore {
  readonly maxInFlight: number;
  readonly leaseMs: number;
  private readonly ttl: number;
  private readonly now: () => number;
  private readonly states = new Map<string, State>();

  constructor(options: MemorySessionStateOptions) {
    knownKeys('', options, ['maxInFlight', 'sessionTtlMs', 'leaseMs', 'now']);
    this.leaseMs = checkStoreLimits(options.maxInFlight, options.sessionTtlMs, options.leaseMs);
    this.maxInFlight = options.maxInFlight;
    this.ttl = options.sessionTtlMs;
    this.now = options.now ?? Date.now;
  }

  async open(ref: SessionRef): Promise<OpenResult> {
    checkRef(ref);
    const state = this.live(ref);
    const token = randomUUID();
    if (state === undefined) {
      this.states.set(key(ref), {
        next: 1,
        writer: token,
        expiresAt: this.now() + this.ttl,
        outcomes: new Map(),
        ids: new Map(),
        lease: undefined,
      });
      return { continued: false, nextSeq: 1, token };
    }
    state.writer = token;
    this.refresh(ref, state);
    return { continued: true, nextSeq: state.next, token };
  }

  async begin(ref: SessionRef, token: string, seq: number, id: string): Promise<BeginResult> {
    checkRef(ref);
    checkMessage(token, seq, id);
    const state = this.live(ref);
    if (state === undefined) return { kind: 'expired' };
    if (state.writer !== token) return { kind: 'replaced' };
    this.refresh(ref, state);
    if (seq < state.next) {
      const kept = state.outcomes.get(seq);
      if (kept === undefined) return { kind: 'forgotten' };
      if (kept[0] !== id) return { kind: 'conflict' };
      return { kind: 'decided', outcome: decodeOutcome(kept[1]), duplicate: true };
    }
    if (state.ids.has(id)) return { kind: 'conflict' };
    if (seq === state.next) {
      const lease = state.lease;
      const now = this.now();
      if (lease !== undefined && lease.seq === seq && lease.token !== token && lease.until > now)
        return { kind: 'busy', retryAfterMs: lease.until - now };
      state.lease = { seq, token, until: now + this.leaseMs };
      return { kind: 'run' };
    }
    if (seq - (state.next - 1) > this.maxInFlight) return { kind: 'too-far' };
    return { kind: 'ahead' };
  }

  async record(
    ref: SessionRef,
    token: string,
    seq: number,
    id: string,
    outcome: Outcome,
  ): Promise<RecordResult> {
    checkRef(ref);
    checkMessage(token, seq, id);
    checkOutcome(outcome);
    const state = this.live(ref);
    if (state === undefined) return { kind: 'expired' };
    if (state.writer !== token && !this.holds(state, token, seq)) return { kind: 'replaced' };
    if (seq !== state.next || state.ids.has(id)) return { kind: 'stale' };
    state.lease = undefined;
    state.outcomes.set(seq, [id, encodeOutcome(outcome)]);
    state.ids.set(id, seq);
    const old = state.outcomes.get(seq - this.maxInFlight);
    if (old !== undefined) {
      state.outcomes.delete(seq - this.maxInFlight);
      state.ids.delete(old[0]);
    }
    state.next = seq + 1;
    this.refresh(ref, state);
    return { kind: 'recorded' };
  }

  async touch(ref: SessionRef, token: string): Promise<TouchResult> {
    checkRef(ref);
    checkToken(token);
    const state = this.live(ref);
    if (state === undefined) return { kind: 'expired' };
    if (state.writer !== token) return { kind: 'replaced' };
    this.refresh(ref, state);
    return { kind: 'touched' };
  }

  private holds(state: State, token: string, seq: number): boolean {
    const lease = state.lease;
    return lease !== undefined && lease.token === token && lease.seq === seq && lease.until > this.now();
  }

  /**
   * Restarts the TTL and moves the state to the map's end: every TTL is the same length, so the
   * map stays in expiry order and `live` drops the expired ones from its front. The map is then
   * bounded by the sessions of the last TTL, not every session ever opened.
   */
  private refresh(ref: SessionRef, state: State): void {
    const k = key(ref);
    state.expiresAt = this.now() + this.ttl;
    this.states.delete(k);
    this.states.set(k, state);
  }

  private live(ref: SessionRef): State | undefined {
    const t = this.now();
    for (const [k, s] of this.states) {
      if (s.expiresAt > t) break;
      this.states.delete(k);
    }
    // Checked again: a clock moved back leaves the order loose, never a dead state answering live.
    const k = key(ref);
    const state = this.states.get(k);
    if (state !== undefined && state.expiresAt <= t) {
      this.states.delete(k);
      return undefined;
    }
    return state;
  }
}

function key(ref: SessionRef): string {
  return JSON.stringify([ref.user, ref.session]);
}
