import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '../core/errors.js';
import { knownKeys } from '../core/validate.js';
import { evalScript, type RedisLike } from '../redis/eval.js';
import { escapeId } from '../redis/keys.js';
import { scripts } from '../redis/scripts.generated.js';
import { isClosedClient, redisStoreError } from '../redis/store-error.js';
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

export interface RedisSessionStateOptions {
  readonly client: RedisLike;
  /** Put before every key, like the Redis store's `prefix`. */
  readonly prefix: string;
  readonly maxInFlight: number;
  readonly sessionTtlMs: number;
  /** How long a `begin` that answered `run` holds its seq; `LEASE_MS` bounds it and its default. */
  readonly leaseMs?: number;
}

/**
 * The session state on Redis: one hash per session, and the lease of its running handler (layout
 * in src/redis/lua/ws-session-open.lua),
 *
 *   <prefix>{ws:<user>:<session>}:s   <prefix>{ws:<user>:<session>}:l
 *
 * one script per operation, so each is atomic and lands on one Cluster slot. User and session are
 * escaped like every id of the store, so neither can end the hash tag early or imitate the other.
 */
export class RedisSessionState implements SessionStateStore {
  readonly maxInFlight: number;
  readonly leaseMs: number;
  private readonly client: RedisLike;
  private readonly prefix: string;
  private readonly ttl: string;
  /**
   * The keys of each ref object seen, with the user and session they were made of: a connection
   * passes the same ref to every call, so two escapes and four concatenations per call become one
   * lookup. Checked against the ref's fields (a caller may reuse an object for another session);
   * weak, so it holds nothing past the ref's own life.
   */
  private readonly keys = new WeakMap<SessionRef, RefKeys>();

  constructor(options: RedisSessionStateOptions) {
    knownKeys('', options, ['client', 'prefix', 'maxInFlight', 'sessionTtlMs', 'leaseMs']);
    if (typeof options.client?.call !== 'function')
      throw new InvalidArgumentError('client', 'a Redis client (ioredis Redis or Cluster)', options.client);
    if (typeof options.prefix !== 'string')
      throw new InvalidArgumentError('prefix', 'a string', options.prefix);
    this.leaseMs = checkStoreLimits(options.maxInFlight, options.sessionTtlMs, options.leaseMs);
    this.client = options.client;
    this.prefix = options.prefix;
    this.maxInFlight = options.maxInFlight;
    this.ttl = String(options.sessionTtlMs);
  }

  /** The key of a session's state. */
  key(ref: SessionRef): string {
    return `${this.prefix}{ws:${escapeId(ref.user)}:${escapeId(ref.session)}}:s`;
  }

  /** The key of a session's lease (same slot as its state). */
  leaseKey(ref: SessionRef): string {
    return `${this.key(ref).slice(0, -2)}:l`;
  }

  async open(ref: SessionRef): Promise<OpenResult> {
    checkRef(ref);
    const token = randomUUID();
    const [continued, next] = (await this.run('open', scripts.wsSessionOpen, ref, [token, this.ttl])) as [
      number,
      string,
    ];
    return { continued: continued === 1, nextSeq: Number(next), token };
  }

  async begin(ref: SessionRef, token: string, seq: number, id: string): Promise<BeginResult> {
    checkRef(ref);
    checkMessage(token, seq, id);
    const [kind, outcome] = (await this.run('begin', scripts.wsSessionBegin, ref, [
      token,
      String(seq),
      id,
      String(this.maxInFlight),
      this.ttl,
      String(this.leaseMs),
    ])) as [string, string | number | undefined];
    if (kind === 'busy') return { kind, retryAfterMs: Number(outcome) };
    if (kind === 'decided') return { kind, outcome: decodeOutcome(outcome as string), duplicate: true };
    if (kind === 'run' && outcome === 'again') return { kind, again: true };
    return { kind } as BeginResult;
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
    const kind = (await this.run('record', scripts.wsSessionRecord, ref, [
      token,
      String(seq),
      id,
      encodeOutcome(outcome),
      String(this.maxInFlight),
      this.ttl,
    ])) as string;
    return { kind } as RecordResult;
  }

  async touch(ref: SessionRef, token: string): Promise<TouchResult> {
    checkRef(ref);
    checkToken(token);
    const kind = (await this.run('touch', scripts.wsSessionTouch, ref, [token, this.ttl], 1)) as string;
    return { kind } as TouchResult;
  }

  async release(ref: SessionRef, token: string, seq: number): Promise<boolean> {
    checkRef(ref);
    checkToken(token);
    return (await this.run('release', scripts.wsSessionRelease, ref, [token, String(seq)])) === 1;
  }

  private async run(
    operation: string,
    script: (typeof scripts)[keyof typeof scripts],
    ref: SessionRef,
    args: string[],
    keys: 1 | 2 = 2,
  ): Promise<unknown> {
    let k = this.keys.get(ref);
    if (k === undefined || k.user !== ref.user || k.session !== ref.session) {
      const state = this.key(ref);
      k = { user: ref.user, session: ref.session, both: [state, this.leaseKey(ref)], state: [state] };
      this.keys.set(ref, k);
    }
    const closed = isClosedClient(this.client);
    try {
      return await evalScript(this.client, script, keys === 1 ? k.state : k.both, args);
    } catch (err) {
      throw redisStoreError(`wsSession.${operation}`, err, closed, 'script');
    }
  }
}

interface RefKeys {
  readonly user: string;
  readonly session: string;
  /** [state, lease] and [state]: the KEYS of the scripts, never modified. */
  readonly both: readonly string[];
  readonly state: readonly string[];
}
