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
}

/**
 * The session state on Redis: one hash per session (layout in src/redis/lua/ws-session-open.lua),
 *
 *   <prefix>{ws:<user>:<session>}:s
 *
 * one script per operation, so each is atomic and lands on one Cluster slot. User and session are
 * escaped like every id of the store, so neither can end the hash tag early or imitate the other.
 */
export class RedisSessionState implements SessionStateStore {
  readonly maxInFlight: number;
  private readonly client: RedisLike;
  private readonly prefix: string;
  private readonly ttl: string;

  constructor(options: RedisSessionStateOptions) {
    knownKeys('', options, ['client', 'prefix', 'maxInFlight', 'sessionTtlMs']);
    if (typeof options.client?.call !== 'function')
      throw new InvalidArgumentError('client', 'a Redis client (ioredis Redis or Cluster)', options.client);
    if (typeof options.prefix !== 'string')
      throw new InvalidArgumentError('prefix', 'a string', options.prefix);
    checkStoreLimits(options.maxInFlight, options.sessionTtlMs);
    this.client = options.client;
    this.prefix = options.prefix;
    this.maxInFlight = options.maxInFlight;
    this.ttl = String(options.sessionTtlMs);
  }

  /** The key of a session's state. */
  key(ref: SessionRef): string {
    return `${this.prefix}{ws:${escapeId(ref.user)}:${escapeId(ref.session)}}:s`;
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
    ])) as [string, string | undefined];
    if (kind === 'decided') return { kind, outcome: decodeOutcome(outcome as string), duplicate: true };
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
    const kind = (await this.run('touch', scripts.wsSessionTouch, ref, [token, this.ttl])) as string;
    return { kind } as TouchResult;
  }

  private async run(
    operation: string,
    script: (typeof scripts)[keyof typeof scripts],
    ref: SessionRef,
    args: string[],
  ): Promise<unknown> {
    const closed = isClosedClient(this.client);
    try {
      return await evalScript(this.client, script, [this.key(ref)], args);
    } catch (err) {
      throw redisStoreError(`wsSession.${operation}`, err, closed, 'script');
    }
  }
}
