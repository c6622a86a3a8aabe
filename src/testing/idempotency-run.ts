// The runner of the idempotency suite (cases in idempotency-cases.ts): each step against the
// store, the answer compared with what the case expects and with what holds of every answer.

import type { IdempotencyBeginReply } from '../store/idempotency.js';
import type { Store } from '../store/store.js';
import { differ } from './differ.js';
import type { ExpectedBegin, IdempotencyCase, IdempotencyStep } from './idempotency-cases.js';

const DEFAULT_MS = 60_000;

type Ops = Required<
  Pick<
    Store,
    'idempotencyBegin' | 'idempotencyRenew' | 'idempotencyComplete' | 'idempotencyRelease' | 'idempotencyGet'
  >
>;

/** Runs one idempotency case on `store`, its names under `prefix`; resolves to its failures. */
export async function runIdempotency(store: Store, c: IdempotencyCase, prefix: string): Promise<string[]> {
  const ops = store as Store & Ops;
  const nameOf = (name: string | undefined) => `${prefix}/${name ?? 'n'}`;
  // The store's time, per record: it never goes back (a cluster's nodes may disagree, one key's never does).
  const lastNow = new Map<string, number>();
  const failures: string[] = [];
  for (const [i, step] of c.steps.entries()) {
    const where = `step ${i} (${step.op}${'token' in step ? ` ${step.token}` : ''})`;
    try {
      const problem = await idempotencyStep(step);
      if (problem) failures.push(`${where}: ${problem}`);
    } catch (err) {
      failures.push(`${where}: threw ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return failures;

  async function idempotencyStep(step: IdempotencyStep): Promise<string | undefined> {
    if (step.op === 'sleep') {
      await new Promise((resolve) => setTimeout(resolve, step.ms));
      return undefined;
    }
    const name = nameOf(step.name);
    const key = step.key ?? 'k';
    switch (step.op) {
      case 'begin': {
        const leaseMs = step.leaseMs ?? DEFAULT_MS;
        const reply = await ops.idempotencyBegin({
          name,
          key,
          payloadHash: step.hash ?? 'h1',
          token: step.token,
          leaseMs,
        });
        return checkBegin(`${name}\n${key}`, reply, leaseMs, step.expect);
      }
      case 'begin-race': {
        const leaseMs = step.leaseMs ?? DEFAULT_MS;
        const replies = await Promise.all(
          step.tokens.map((token) =>
            ops.idempotencyBegin({ name, key, payloadHash: step.hash ?? 'h1', token, leaseMs }),
          ),
        );
        const won = replies.filter((r) => r?.outcome === 'acquired');
        if (won.length !== 1) return `racing begins: expected exactly one acquired, got ${won.length}`;
        const other = replies.find((r) => r?.outcome !== 'acquired' && r?.outcome !== 'in-progress');
        if (other) return `racing begins: the others must be in progress, got ${JSON.stringify(other)}`;
        for (const r of replies) {
          const problem = shape(r, leaseMs);
          if (problem) return problem;
        }
        return undefined;
      }
      case 'renew':
        return differ(
          'renewed',
          await ops.idempotencyRenew(name, key, step.token, step.leaseMs ?? DEFAULT_MS),
          step.expect,
        );
      case 'complete':
        return differ(
          'completed',
          await ops.idempotencyComplete(name, key, step.token, step.value, step.ttlMs ?? DEFAULT_MS),
          step.expect,
        );
      case 'release':
        return differ('released', await ops.idempotencyRelease(name, key, step.token), step.expect);
      case 'get':
        return differ('state', await ops.idempotencyGet(name, key), step.expect);
    }
  }

  function checkBegin(
    record: string,
    reply: IdempotencyBeginReply,
    leaseMs: number,
    expect: ExpectedBegin,
  ): string | undefined {
    const problem = shape(reply, leaseMs);
    if (problem) return problem;
    const last = lastNow.get(record) ?? Number.NEGATIVE_INFINITY;
    if (reply.now < last) return `reply now went back: ${reply.now} after ${last}`;
    lastNow.set(record, reply.now);
    const got: Record<string, unknown> = { outcome: reply.outcome };
    if (expect.outcome === 'acquired' && expect.takeover !== undefined && reply.outcome === 'acquired') {
      got.takeover = reply.takeover;
    }
    if (reply.outcome === 'completed') got.value = reply.value;
    if (
      expect.outcome === 'in-progress' &&
      reply.outcome === 'in-progress' &&
      expect.retryAfterAtLeastMs !== undefined
    ) {
      if (reply.retryAfterMs < expect.retryAfterAtLeastMs) {
        return `retryAfterMs: expected at least ${expect.retryAfterAtLeastMs}, got ${reply.retryAfterMs}`;
      }
    }
    const wanted: Record<string, unknown> = { outcome: expect.outcome };
    if (expect.outcome === 'acquired' && expect.takeover !== undefined) wanted.takeover = expect.takeover;
    if (expect.outcome === 'completed') wanted.value = expect.value;
    return differ('begin', got, wanted);
  }
}

/** What holds of every begin reply, whatever the time: whole ms, a lease of the length asked for. */
function shape(reply: IdempotencyBeginReply, leaseMs: number): string | undefined {
  if (typeof reply !== 'object' || reply === null) return `expected a reply, got ${String(reply)}`;
  if (!Number.isSafeInteger(reply.now))
    return `reply now: expected the store's time in whole ms, got ${reply.now}`;
  switch (reply.outcome) {
    case 'acquired':
      if (typeof reply.takeover !== 'boolean') return `takeover: expected a boolean, got ${reply.takeover}`;
      if (reply.leaseExpiresAt !== reply.now + leaseMs) {
        return `leaseExpiresAt: expected now + leaseMs (${reply.now} + ${leaseMs}), got ${reply.leaseExpiresAt}`;
      }
      return undefined;
    case 'in-progress':
      // The holder's lease is live (> 0 left) and no longer than a lease of the suite (<= 600 s).
      if (
        !Number.isSafeInteger(reply.retryAfterMs) ||
        reply.retryAfterMs <= 0 ||
        reply.retryAfterMs > 600_000
      ) {
        return `retryAfterMs: expected whole ms in (0, the holder's lease], got ${reply.retryAfterMs}`;
      }
      return undefined;
    case 'completed':
      return typeof reply.value === 'string'
        ? undefined
        : `value: expected a string, got ${typeof reply.value}`;
    case 'mismatch':
      return undefined;
    default:
      return `unknown outcome ${JSON.stringify((reply as { outcome?: unknown }).outcome)}`;
  }
}
