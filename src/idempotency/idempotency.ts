import { randomUUID } from 'node:crypto';
import type { Duration } from '../core/duration.js';
import {
  InvalidArgumentError,
  InvalidOptionError,
  isOnceflowError,
  LeaseLostError,
  ResultTooLargeError,
} from '../core/errors.js';
import { utf8Bytes, withinLimit } from '../core/limits.js';
import { type Emit, errorName } from '../core/observer.js';
import { isPlainObject, keysOf, knownKeys, nonEmptyStringArg } from '../core/validate.js';
import type { IdempotencyBeginReply } from '../store/idempotency.js';
import { LeaseRenewer } from './lease-renewer.js';
import {
  type IdempotencyOptions,
  type ResolvedIdempotencyOptions,
  resolveOptions,
  waitMs,
} from './options.js';
import { payloadHash } from './payload-hash.js';

/** One idempotent call: its key, and the payload whose hash must match the key's record. */
export interface IdempotencyCall {
  /** The call's identity (an `Idempotency-Key` header, an event id, a signature): at most `LIMITS.keyBytes`. */
  readonly key: string;
  /** What the call is about (a request body): the same key with another payload is `mismatch`. */
  readonly payload?: unknown;
}

/** Options of one {@link Idempotency.run}. */
export interface RunOptions {
  /**
   * While another caller holds the key: `false` (default) answers `in-progress` at once; `true`
   * waits up to one lease, a duration that long, polling with backoff until the holder's result
   * is recorded (`replayed`) or its lease runs out (then this call takes over: `executed`).
   */
  readonly wait?: boolean | Duration;
}

/**
 * What {@link Idempotency.run} did, a union on `outcome`:
 * - `executed`: this call ran `fn`; `value` is what it returned, now recorded until the ttl.
 * - `replayed`: a call with the key completed before; `value` is its recorded result,
 *   deserialized; `fn` did not run.
 * - `in-progress`: another caller holds the key and its `fn` is running; retry after `retryAfterMs`
 *   (when its lease runs out, at the latest).
 * - `mismatch`: the key was used with another payload; nothing ran.
 *
 * @example
 * ```ts
 * const idem = createIdempotency();
 * const r = await idem.run({ key: 'k1', payload: { amount: 5 } }, () => 'sent');
 * const text = r.outcome === 'executed' || r.outcome === 'replayed' ? r.value : r.outcome;
 * text; // 'sent'
 * ```
 */
export type RunResult<T> =
  | { readonly outcome: 'executed'; readonly value: T }
  | { readonly outcome: 'replayed'; readonly value: T }
  | { readonly outcome: 'in-progress'; readonly retryAfterMs: number }
  | { readonly outcome: 'mismatch' };

/** Idempotent calls on one store and name (see {@link createIdempotency}). */
export interface Idempotency {
  /** The key space on the store. */
  readonly name: string;
  /** The largest result kept, in UTF-8 bytes serialized (`maxResultBytes`): an adapter sizes its copies by it. */
  readonly maxResultBytes: number;
  /**
   * Runs `fn` once per key: the first caller runs it and its result is recorded; the others get
   * that result back (`replayed`) until the ttl, or `in-progress` while it runs, or `mismatch`
   * for another payload. `fn` throwing releases the key (the next call runs again) and rejects
   * with that error, unchanged.
   *
   * Rejects, besides: `ERR_INVALID_ARGUMENT` (a key or payload that is not valid: nothing
   * happened; or a result the serializer cannot keep, such as one with a cycle: fn ran, the key
   * was released), `ERR_RESULT_TOO_LARGE` (fn ran; its result was over `maxResultBytes`, the key was
   * released), `ERR_LEASE_LOST` (fn ran; its lease ran out before the result could be recorded,
   * and another caller may run fn too), `ERR_STORE` (the store failed; when `fn` already ran, its
   * result may or may not be recorded).
   */
  run<T>(call: IdempotencyCall, fn: () => T | Promise<T>, options?: RunOptions): Promise<RunResult<T>>;
  /**
   * Read-only "seen before?" for a buffer layer: `true` when the store holds a live completed
   * record of `key`, read on the store's clock (whatever payload it ran with: `run` replays it for
   * the same payload and answers `mismatch` for another, so where one key may come with
   * conflicting payloads, call `run` rather than drop on `seen`); `false` when it does not
   * (none, expired, or in progress), **or** when the `preCheck` filter proves this idempotency never
   * ran the key (no store read). `false` is advisory: go on and `run`, which decides. Needs a store
   * with `idempotencyGet` (memory, Redis, PostgreSQL). Emits `idempotency.pre-check`.
   *
   * @example
   * ```ts
   * const idem = createIdempotency({ preCheck: new SeenFilter({ expected: 10_000 }) });
   * await idem.seen('order-1'); // false (the filter answered: no store read)
   * await idem.run({ key: 'order-1' }, () => 'charged');
   * await idem.seen('order-1'); // true (the filter said maybe, the record is completed)
   * ```
   */
  seen(key: string): Promise<boolean>;
}

const CALL_FIELDS = keysOf<IdempotencyCall>({ key: true, payload: true });
const RUN_OPTIONS = keysOf<RunOptions>({ wait: true });

// Polling of a waiting caller: from 10 ms (a typical fn's run, an HTTP call, is tens of ms),
// doubling up to a third of the lease and never more than 1 s, so a waiter notices a result within
// ~1 s and polls a long-running key at most once a second; with jitter, so waiters started
// together do not poll in step.
const POLL_FIRST_MS = 10;
const POLL_MAX_MS = 1_000;

/**
 * Idempotent calls for any side effect (DESIGN §3.6): `run({ key, payload }, fn)` runs `fn` once
 * per key and records its result, so a retried request, a redelivered message or a second worker
 * gets that result back instead of doing the effect again. One record per key, every transition
 * of it one atomic step of the store, on the store's clock (a `FakeClock` given to `memoryStore`
 * drives leases and ttl).
 *
 * The holder renews its lease every lease/3 while `fn` runs; if it dies, after the lease another
 * caller takes the key over and runs `fn` again. **What cannot be promised:** an `fn` whose
 * effect happened just before its holder died (before its result was recorded) runs again after
 * the lease: at that point the effect is at-least-once. An effect that must be exactly once goes
 * through the ledger (`createLedger`: its window and its balances change in one atomic step), or
 * commits with the record in one transaction (PostgreSQL). A holder whose lease ran out cannot
 * record its result (fencing by a token per call): it gets `ERR_LEASE_LOST`.
 *
 * @example
 * ```ts
 * const idem = createIdempotency({ ttl: '24h' });
 * let charges = 0;
 * const charge = () => ({ id: `ch_${++charges}`, amount: 500n });
 * const first = await idem.run({ key: 'order-1', payload: { amount: 500 } }, charge);
 * first; // { outcome: 'executed', value: { id: 'ch_1', amount: 500n } }
 * const again = await idem.run({ key: 'order-1', payload: { amount: 500 } }, charge);
 * again; // { outcome: 'replayed', value: { id: 'ch_1', amount: 500n } }
 * (await idem.run({ key: 'order-1', payload: { amount: 900 } }, charge)).outcome; // 'mismatch'
 * charges; // 1
 * ```
 */
export function createIdempotency(options: IdempotencyOptions = {}): Idempotency {
  return idempotencyOf(resolveOptions(options));
}

/** The {@link Idempotency} of options already validated (`idempotent()` reads its lease first). */
export function idempotencyOf(resolved: ResolvedIdempotencyOptions): Idempotency {
  return {
    name: resolved.name,
    maxResultBytes: resolved.maxResultBytes,
    run: (call, fn, runOptions) => run(resolved, call, fn, runOptions),
    seen: (key) => seen(resolved, key),
  };
}

/** See {@link Idempotency.seen}. */
async function seen(o: ResolvedIdempotencyOptions, raw: string): Promise<boolean> {
  const key = withinLimit('key', nonEmptyStringArg('key', raw), 'keyBytes');
  const get = o.ops.idempotencyGet;
  if (get === undefined) {
    throw new InvalidOptionError('store', 'a store with idempotencyGet (for seen)', 'a store without it');
  }
  const emit = o.emit;
  if (o.preCheck !== undefined && !o.preCheck.mightContain(key)) {
    if (emit !== undefined)
      emit({ part: 'idempotency', type: 'pre-check', scope: o.name, outcome: 'skipped' });
    return false;
  }
  const completed = (await get(o.name, key)) === 'completed';
  if (emit !== undefined) {
    emit({
      part: 'idempotency',
      type: 'pre-check',
      scope: o.name,
      outcome: completed ? 'read-seen' : 'read-unseen',
    });
  }
  return completed;
}

// Not `async`: the validated run's own promise is returned as is (no second promise and its extra
// microtask turns); invalid input still rejects, never throws.
function run<T>(
  o: ResolvedIdempotencyOptions,
  call: IdempotencyCall,
  fn: () => T | Promise<T>,
  runOptions: RunOptions | undefined = {},
): Promise<RunResult<T>> {
  let key: string;
  let budget: number;
  let hash: string;
  try {
    if (!isPlainObject(call as unknown))
      throw new InvalidArgumentError('call', 'an object like { key, payload }', call);
    // A misspelt `payload` would go unhashed: another payload under the key would not be a mismatch.
    knownKeys('call', call, CALL_FIELDS, 'argument');
    key = withinLimit('key', nonEmptyStringArg('key', call.key), 'keyBytes');
    if (typeof fn !== 'function') throw new InvalidArgumentError('fn', 'a function', fn);
    if (!isPlainObject(runOptions as unknown)) {
      throw new InvalidArgumentError('options', 'an object like { wait }', runOptions);
    }
    knownKeys('options', runOptions, RUN_OPTIONS, 'argument');
    budget = waitMs(runOptions.wait, o.leaseMs, 'wait', 'argument');
    hash = o.hashPayload ? payloadHash(call.payload) : '';
  } catch (err) {
    return Promise.reject(err);
  }
  // Before the store call, so a `seen` racing this run already reads the store: a key whose run
  // then fails (released) only costs a later `seen` one read.
  if (o.preCheck !== undefined) o.preCheck.add(key);
  const emit = o.emit;
  if (emit === undefined) return settle(o, key, hash, budget, fn, undefined);
  const name = o.name;
  return settle(o, key, hash, budget, fn, emit).catch((err: unknown) => {
    if (isOnceflowError(err, 'ERR_LEASE_LOST'))
      emit({ part: 'idempotency', type: 'lease-lost', scope: name, key });
    emit({
      part: 'idempotency',
      type: 'run',
      scope: name,
      outcome: 'failed',
      takeover: false,
      error: errorName(err),
      key,
    });
    throw err;
  });
}

/** A validated run: begins (waiting up to `budget`), then replays or executes. */
async function settle<T>(
  o: ResolvedIdempotencyOptions,
  key: string,
  hash: string,
  budget: number,
  fn: () => T | Promise<T>,
  emit: Emit | undefined,
): Promise<RunResult<T>> {
  const token = randomUUID();
  const start = performance.now();
  let reply: IdempotencyBeginReply;
  for (let attempt = 0; ; attempt++) {
    reply = await o.ops.idempotencyBegin({ name: o.name, key, payloadHash: hash, token, leaseMs: o.leaseMs });
    if (reply.outcome !== 'in-progress') break;
    const left = budget - (performance.now() - start);
    if (left <= 0) {
      if (emit !== undefined) report(emit, o, key, 'in-progress', false);
      return { outcome: 'in-progress', retryAfterMs: reply.retryAfterMs };
    }
    await sleep(Math.min(left, pollDelay(attempt, o.leaseMs)));
  }
  switch (reply.outcome) {
    case 'completed': {
      const value = o.serializer.deserialize(reply.value) as T;
      if (emit !== undefined) report(emit, o, key, 'replayed', false);
      return { outcome: 'replayed', value };
    }
    case 'mismatch':
      if (emit !== undefined) report(emit, o, key, 'mismatch', false);
      return { outcome: 'mismatch' };
    case 'acquired': {
      const value = await execute(o, key, token, fn);
      if (emit !== undefined) report(emit, o, key, 'executed', reply.takeover);
      return { outcome: 'executed', value };
    }
  }
}

function report(
  emit: Emit,
  o: ResolvedIdempotencyOptions,
  key: string,
  outcome: RunResult<unknown>['outcome'],
  takeover: boolean,
): void {
  emit({ part: 'idempotency', type: 'run', scope: o.name, outcome, takeover, key });
}

/** Runs `fn` as the key's holder: renewing, then recording its result, or releasing the key. */
async function execute<T>(
  o: ResolvedIdempotencyOptions,
  key: string,
  token: string,
  fn: () => T | Promise<T>,
) {
  const renewer = new LeaseRenewer(o.ops, o.name, key, token, o.leaseMs);
  let value: T;
  let text: string;
  try {
    value = await fn();
  } catch (err) {
    renewer.stop();
    await release(o, key, token);
    throw err;
  }
  renewer.stop();
  if (renewer.lost) throw new LeaseLostError(key);
  try {
    text = o.serializer.serialize(value);
    if (typeof text !== 'string')
      throw new InvalidArgumentError('serializer.serialize(value)', 'a string', text);
  } catch (err) {
    await release(o, key, token);
    throw err;
  }
  // Each UTF-16 unit is 1 to 3 bytes: only a text that might be over is measured.
  if (text.length * 3 > o.maxResultBytes && utf8Bytes(text) > o.maxResultBytes) {
    await release(o, key, token);
    throw new ResultTooLargeError(key, utf8Bytes(text), o.maxResultBytes);
  }
  if (!(await o.ops.idempotencyComplete(o.name, key, token, text, o.ttlMs))) throw new LeaseLostError(key);
  return value;
}

// A release that fails (the store is down) leaves the key to its lease, which runs out on its
// own: the caller gets fn's error (or the result's), not the store's.
async function release(o: ResolvedIdempotencyOptions, key: string, token: string): Promise<void> {
  try {
    await o.ops.idempotencyRelease(o.name, key, token);
  } catch {
    // see above
  }
}

function pollDelay(attempt: number, leaseMs: number): number {
  const cap = Math.max(POLL_FIRST_MS, Math.min(POLL_MAX_MS, Math.floor(leaseMs / 3)));
  const delay = Math.min(cap, POLL_FIRST_MS * 2 ** Math.min(attempt, 20));
  return delay / 2 + Math.random() * (delay / 2);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
