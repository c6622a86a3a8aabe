// The runner of the limiter suites (cases in limiter-cases.ts): each take against the store, the
// reply compared with what the case expects, with the store made unreachable for `limiter-outage`.

import { isOnceflowError } from '../core/errors.js';
import { isPlainObject } from '../core/validate.js';
import { limiterNamespace } from '../limiter/keys.js';
import type { LimitCall, LimiterAdjustReply, LimiterTakeReply } from '../store/limiter.js';
import type { Store } from '../store/store.js';
import type { LimitSpec } from '../windows/limits/types.js';
import { differ } from './differ.js';
import type {
  BadNumber,
  ExpectedState,
  ExpectedVerdict,
  LimiterCase,
  LimiterCaseLimit,
  LimiterStep,
} from './limiter-cases.js';

/** Makes the store unreachable (`begin`) and reachable again (`end`), for the `limiter-outage` suite. */
export interface OutageHook {
  begin(): void | Promise<void>;
  end(): void | Promise<void>;
}

// The base instant of the limiter cases: aligned to the hour (a multiple of every window they
// use), in this century (a store may check times are plausible), well below 2^52.
const BASE = 1_699_999_200_000;

/** Runs one limiter case on `store`, its names under `name`; resolves to its failures. */
export async function runLimiter(
  store: Store,
  c: LimiterCase,
  name: string,
  outage: OutageHook | undefined,
): Promise<string[]> {
  const take = store.limiterTake?.bind(store) as NonNullable<Store['limiterTake']>;
  const specs = c.limits.map(toLimitSpec);
  const namespace = (space?: string) => limiterNamespace(space === undefined ? name : `${name}/${space}`);
  // Every limit counts by the one subject. Fresh call objects per take: a store that keeps what
  // it derives from a call object must find the same state again from a new one.
  const callsOf = (subject: string, given: readonly LimitSpec[] = specs): LimitCall[] =>
    given.map((spec) => ({ spec, subject }));
  const failures: string[] = [];
  let lastStoreNow = Number.NEGATIVE_INFINITY;
  let down = false;
  for (const [i, step] of c.steps.entries()) {
    const where = `step ${i} (${step.op}${'at' in step && step.at !== undefined ? ` at ${step.at}` : ''})`;
    try {
      const problem = await limiterStep(step);
      if (problem) failures.push(`${where}: ${problem}`);
    } catch (err) {
      failures.push(`${where}: threw ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (down) await outage?.end();
  return failures;

  async function limiterStep(step: LimiterStep): Promise<string | undefined> {
    switch (step.op) {
      case 'take': {
        const cost = step.cost ?? 1;
        const now = step.at === 'store' ? undefined : BASE + step.at;
        const reply = await take({
          namespace: namespace(step.space),
          limits: callsOf(step.subject ?? 'k'),
          cost,
          now,
        });
        const at = step.at === 'store' ? reply?.now : BASE;
        if (step.at === 'store') {
          if (!Number.isSafeInteger(reply?.now) || reply.now < lastStoreNow) {
            return `reply now: expected the store's time in whole ms, never going back (last ${lastStoreNow}), got ${reply?.now}`;
          }
          lastStoreNow = reply.now;
        }
        return checkReply(reply, now, step.expect, at);
      }
      case 'take-invalid': {
        const spec = specs[0] as LimitSpec;
        const bad = step.spec;
        const broken =
          bad === undefined ? spec : Object.freeze({ ...spec, [bad.field]: badValue(bad.value) });
        const command = {
          namespace: namespace(),
          limits: callsOf('k', [broken, ...specs.slice(1)]),
          cost: step.cost === undefined ? 1 : badValue(step.cost),
          now: step.now === undefined ? BASE + (step.at ?? 0) : badValue(step.now),
        } as Parameters<typeof take>[0];
        let pending: Promise<LimiterTakeReply>;
        try {
          pending = Promise.resolve(take(command));
        } catch (err) {
          return `threw synchronously (a store rejects, never throws): ${String(err)}`;
        }
        return pending.then(
          (reply) => `expected a rejection with ${step.code}, got an answer ${JSON.stringify(reply)}`,
          (err: unknown) =>
            hasCode(err, step.code) ? undefined : `expected ${step.code}, got ${describe(err)}`,
        );
      }
      case 'outage-begin':
        await outage?.begin();
        down = true;
        return undefined;
      case 'outage-end':
        await outage?.end();
        down = false;
        return undefined;
      case 'take-fails': {
        const command = {
          namespace: namespace(),
          limits: callsOf('k'),
          cost: step.cost ?? 1,
          now: BASE + step.at,
        };
        let pending: Promise<LimiterTakeReply>;
        try {
          pending = Promise.resolve(take(command));
        } catch (err) {
          return `threw synchronously (a store rejects, never throws): ${String(err)}`;
        }
        return pending.then(
          (reply) =>
            `expected a rejection with ${step.code} while unreachable, got an answer ${JSON.stringify(reply)}`,
          (err: unknown) =>
            hasCode(err, step.code) ? undefined : `expected ${step.code}, got ${describe(err)}`,
        );
      }
      case 'adjust': {
        const adjust = store.limiterAdjust?.bind(store) as NonNullable<Store['limiterAdjust']>;
        const given = step.kind === 'block' ? specs.filter((x) => (x.blockMs ?? 0) > 0) : specs;
        let pending: Promise<LimiterAdjustReply>;
        try {
          pending = Promise.resolve(
            adjust({
              namespace: namespace(),
              limits: callsOf(step.subject ?? 'k', given),
              op: step.kind,
              points: step.points,
              durationMs: step.durationMs,
              now: BASE + step.at,
              ...(step.notAfter !== undefined ? { notAfter: BASE + step.notAfter } : {}),
            }),
          );
        } catch (err) {
          return `threw synchronously (a store rejects, never throws): ${String(err)}`;
        }
        const expect = step.expect;
        if ('code' in expect) {
          return pending.then(
            (reply) => `expected a rejection with ${expect.code}, got an answer ${JSON.stringify(reply)}`,
            (err: unknown) =>
              hasCode(err, expect.code) ? undefined : `expected ${expect.code}, got ${describe(err)}`,
          );
        }
        const reply = await pending;
        if (!isPlainObject(reply) || !Array.isArray(reply.states) || reply.states.length !== given.length) {
          return `expected one state per limit (${given.length}), got ${describe(reply)}`;
        }
        const problem = differ('adjust now', reply.now, BASE + step.at);
        if (problem) return problem;
        const got = reply.states.map((x, j) => shownState(x, expect.states[j] ?? {}));
        return differ('states', got, expect.states);
      }
      case 'delete': {
        const deleted = await store.limiterDelete?.({
          namespace: namespace(),
          limits: callsOf(step.subject),
        });
        return differ('keys deleted', deleted, step.expect);
      }
      case 'reset':
        return differ('keys reset', await store.limiterReset?.(namespace(step.space)), step.expect);
    }
  }

  function checkReply(
    reply: LimiterTakeReply,
    now: number | undefined,
    expect: { allowed: boolean; verdicts?: ExpectedVerdict[] },
    base: number,
  ): string | undefined {
    if (!isPlainObject(reply) || !Array.isArray(reply.verdicts))
      return `expected a reply, got ${describe(reply)}`;
    if (now !== undefined && reply.now !== now)
      return `reply now: expected ${now} (the command's), got ${reply.now}`;
    if (reply.verdicts.length !== specs.length) {
      return `expected one verdict per limit (${specs.length}), got ${reply.verdicts.length}`;
    }
    const allAllowed = reply.verdicts.every((x) => x?.allowed === true);
    if (reply.allowed !== allAllowed) {
      return `reply allowed ${reply.allowed}, but its verdicts say ${allAllowed} (allowed iff every limit allows)`;
    }
    const problem = differ('allowed', reply.allowed, expect.allowed);
    if (problem || expect.verdicts === undefined) return problem;
    const got = reply.verdicts.map((x, j) => shown(x, expect.verdicts?.[j] ?? {}, base));
    return differ('verdicts', got, expect.verdicts);
  }
}

/** The fields of `verdict` that `expected` names, in the case's terms (times relative to `base`). */
function shown(verdict: LimiterTakeReply['verdicts'][number], expected: ExpectedVerdict, base: number) {
  const out: Record<string, unknown> = {};
  if ('allowed' in expected) out.allowed = verdict.allowed;
  if ('remaining' in expected) out.remaining = verdict.remaining;
  if ('resetAt' in expected) out.resetAt = verdict.resetAt - base;
  if ('retryAfterMs' in expected) {
    out.retryAfterMs = verdict.retryAfterMs === Number.POSITIVE_INFINITY ? 'never' : verdict.retryAfterMs;
  }
  return out;
}

/** The fields of `state` that `expected` names, times relative to the base instant. */
function shownState(state: LimiterAdjustReply['states'][number], expected: ExpectedState) {
  const out: Record<string, unknown> = {};
  if ('used' in expected) out.used = state.used;
  if ('remaining' in expected) out.remaining = state.remaining;
  if ('resetAt' in expected) out.resetAt = state.resetAt - BASE;
  if ('blockedUntil' in expected)
    out.blockedUntil = state.blockedUntil === 0 ? 'none' : state.blockedUntil - BASE;
  return out;
}

function toLimitSpec(l: LimiterCaseLimit): LimitSpec {
  const param =
    l.algorithm === 'sliding-window'
      ? (l.granularityMs ?? l.windowMs)
      : l.algorithm === 'gcra'
        ? (l.burst ?? l.limit)
        : 0;
  const spec = { id: l.id, algorithm: l.algorithm, limit: l.limit, windowMs: l.windowMs, param };
  return Object.freeze(l.blockMs === undefined ? spec : { ...spec, blockMs: l.blockMs });
}

function badValue(value: BadNumber | string): unknown {
  if (value === 'NaN') return Number.NaN;
  if (value === 'Infinity') return Number.POSITIVE_INFINITY;
  if (value === '-Infinity') return Number.NEGATIVE_INFINITY;
  return value;
}

function hasCode(err: unknown, code: string): boolean {
  return isOnceflowError(err) && err.code === code;
}

function describe(err: unknown): string {
  if (isOnceflowError(err)) return `${err.code} (${err.message})`;
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
