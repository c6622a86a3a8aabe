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
  /**
   * seq -> [id, encoded outcome], the last `maxInFlight` seqs. Made by the first record: a session
   * that never sent a message (an idle connection) holds no Map.
   */
  outcomes: Map<number, [string, string]> | undefined;
  /** id -> seq, for the same seqs; made with `outcomes`. */
  ids: Map<string, number> | undefined;
  /**
   * The lease of the last `begin` that answered `run`, if not recorded since (`leaseSeq` 0: none;
   * seqs start at 1). Fields of the state, not an object: a `begin` per message allocates nothing.
   */
  leaseSeq: number;
  leaseToken: string;
  leaseUntil: number;
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
  /**
   * No state expires before this (at most the first state's expiry): `live` sweeps the map's
   * front only once the clock reaches it, not on every call.
   */
  private sweepAt = Number.POSITIVE_INFINITY;

  constructor(options: MemorySessionStateOptions) {
    knownKeys('', options, ['maxInFlight', 'sessionTtlMs', 'leaseMs', 'now']);
    this.leaseMs = checkStoreLimits(options.maxInFlight, options.sessionTtlMs, options.leaseMs);
    this.maxInFlight = options.maxInFlight;
    this.ttl = options.sessionTtlMs;
    this.now = options.now ?? Date.now;
  }

  async open(ref: SessionRef): Promise<OpenResult> {
    checkRef(ref);
    const k = key(ref);
    const state = this.live(k);
    const token = randomUUID();
    if (state === undefined) {
      const expiresAt = this.now() + this.ttl;
      this.states.set(k, {
        next: 1,
        writer: token,
        expiresAt,
        outcomes: undefined,
        ids: undefined,
        leaseSeq: 0,
        leaseToken: '',
        leaseUntil: 0,
      });
      if (expiresAt < this.sweepAt) this.sweepAt = expiresAt;
      return { continued: false, nextSeq: 1, token };
    }
    state.writer = token;
    this.refresh(k, state);
    return { continued: true, nextSeq: state.next, token };
  }

  async begin(ref: SessionRef, token: string, seq: number, id: string): Promise<BeginResult> {
    checkRef(ref);
    checkMessage(token, seq, id);
    const k = key(ref);
    const state = this.live(k);
    if (state === undefined) return { kind: 'expired' };
    if (state.writer !== token) return { kind: 'replaced' };
    this.refresh(k, state);
    if (seq < state.next) {
      const kept = state.outcomes?.get(seq);
      if (kept === undefined) return { kind: 'forgotten' };
      if (kept[0] !== id) return { kind: 'conflict' };
      return { kind: 'decided', outcome: decodeOutcome(kept[1]), duplicate: true };
    }
    if (state.ids?.has(id)) return { kind: 'conflict' };
    if (seq === state.next) {
      const now = this.now();
      if (state.leaseSeq === seq && state.leaseToken !== token && state.leaseUntil > now)
        return { kind: 'busy', retryAfterMs: state.leaseUntil - now };
      // The lease's fields outlive its end until a record: a seq leased before is a second run.
      const again = state.leaseSeq === seq;
      state.leaseSeq = seq;
      state.leaseToken = token;
      state.leaseUntil = now + this.leaseMs;
      return again ? RUN_AGAIN : RUN;
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
    const k = key(ref);
    const state = this.live(k);
    if (state === undefined) return { kind: 'expired' };
    if (state.writer !== token && !this.holds(state, token, seq)) return { kind: 'replaced' };
    if (seq !== state.next || state.ids?.has(id)) return { kind: 'stale' };
    state.leaseSeq = 0;
    state.leaseToken = '';
    const outcomes = (state.outcomes ??= new Map());
    const ids = (state.ids ??= new Map());
    outcomes.set(seq, [id, encodeOutcome(outcome)]);
    ids.set(id, seq);
    const old = outcomes.get(seq - this.maxInFlight);
    if (old !== undefined) {
      outcomes.delete(seq - this.maxInFlight);
      ids.delete(old[0]);
    }
    state.next = seq + 1;
    this.refresh(k, state);
    return RECORDED;
  }

  async touch(ref: SessionRef, token: string): Promise<TouchResult> {
    checkRef(ref);
    checkToken(token);
    const k = key(ref);
    const state = this.live(k);
    if (state === undefined) return { kind: 'expired' };
    if (state.writer !== token) return { kind: 'replaced' };
    this.refresh(k, state);
    return { kind: 'touched' };
  }

  async release(ref: SessionRef, token: string, seq: number): Promise<boolean> {
    checkRef(ref);
    checkToken(token);
    const state = this.live(key(ref));
    if (state === undefined || !this.holds(state, token, seq)) return false;
    state.leaseSeq = 0;
    state.leaseToken = '';
    return true;
  }

  private holds(state: State, token: string, seq: number): boolean {
    return state.leaseSeq === seq && state.leaseToken === token && state.leaseUntil > this.now();
  }

  /**
   * Restarts the TTL and moves the state to the map's end: every TTL is the same length, so the
   * map stays in expiry order and `live` drops the expired ones from its front. The map is then
   * bounded by the sessions of the last TTL, not every session ever opened.
   */
  private refresh(k: string, state: State): void {
    state.expiresAt = this.now() + this.ttl;
    if (state.expiresAt < this.sweepAt) this.sweepAt = state.expiresAt;
    this.states.delete(k);
    this.states.set(k, state);
  }

  private live(k: string): State | undefined {
    const t = this.now();
    if (t >= this.sweepAt) {
      this.sweepAt = Number.POSITIVE_INFINITY;
      for (const [front, s] of this.states) {
        if (s.expiresAt > t) {
          this.sweepAt = s.expiresAt;
          break;
        }
        this.states.delete(front);
      }
    }
    // Checked again: a clock moved back leaves the order loose, never a dead state answering live.
    const state = this.states.get(k);
    if (state !== undefined && state.expiresAt <= t) {
      this.states.delete(k);
      return undefined;
    }
    return state;
  }
}

/** A session's charset has no space, so the first space ends it: no two refs share a key. */
function key(ref: SessionRef): string {
  return `${ref.session} ${ref.user}`;
}

// Answers without fields are shared: callers only read them.
const RUN: BeginResult = Object.freeze({ kind: 'run' });
const RUN_AGAIN: BeginResult = Object.freeze({ kind: 'run', again: true });
const RECORDED: RecordResult = Object.freeze({ kind: 'recorded' });
