// Idempotency against the reference model of its record (test/support/idempotency-model.ts):
// first the memory store's four operations, sweeping at every call or almost never, then
// `createIdempotency().run` itself under random interleavings of calls, completions, failures,
// crashes (a holder that stops and never finishes), renewals and clock steps.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/core/clock.js';
import { isOnceflowError } from '../../src/core/errors.js';
import { createIdempotency, type RunResult } from '../../src/idempotency/idempotency.js';
import { payloadHash } from '../../src/idempotency/payload-hash.js';
import { MemoryIdempotencyRecords } from '../../src/store/memory/idempotency.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import { wrapStore } from '../../src/testing/wrap-store.js';
import {
  type ModelAnswer,
  type ModelOp,
  type ModelRecords,
  modelStep,
} from '../support/idempotency-model.js';

const KEYS = ['a', 'b'];
const HASHES = ['h1', 'h2'];
const TOKENS = ['t1', 't2', 't3', 't4'];

type StoreStep = ModelOp | { op: 'advance'; ms: number };

const storeStep: fc.Arbitrary<StoreStep> = fc.oneof(
  fc.record({
    op: fc.constant('begin' as const),
    key: fc.constantFrom(...KEYS),
    hash: fc.constantFrom(...HASHES),
    token: fc.constantFrom(...TOKENS),
    leaseMs: fc.constantFrom(5, 10, 50),
  }),
  fc.record({
    op: fc.constant('renew' as const),
    key: fc.constantFrom(...KEYS),
    token: fc.constantFrom(...TOKENS),
    leaseMs: fc.constantFrom(5, 10, 50),
  }),
  fc.record({
    op: fc.constant('complete' as const),
    key: fc.constantFrom(...KEYS),
    token: fc.constantFrom(...TOKENS),
    value: fc.constantFrom('v1', 'v2', ''),
    ttlMs: fc.constantFrom(5, 20, 100),
  }),
  fc.record({
    op: fc.constant('release' as const),
    key: fc.constantFrom(...KEYS),
    token: fc.constantFrom(...TOKENS),
  }),
  fc.record({ op: fc.constant('advance' as const), ms: fc.constantFrom(1, 4, 5, 9, 10, 30) }),
);

describe('memory idempotency records against the model', () => {
  for (const sweepMin of [1, 1024]) {
    it(`every answer is the model's, whatever the sweep did (sweep every ${sweepMin} begins)`, async () => {
      const seen = new Set<string>();
      await fc.assert(
        fc.asyncProperty(fc.array(storeStep, { minLength: 20, maxLength: 80 }), async (steps) => {
          const clock = new FakeClock(1_000);
          const records = new MemoryIdempotencyRecords(clock, sweepMin);
          let model: ModelRecords = new Map();
          for (const step of steps) {
            if (step.op === 'advance') {
              clock.advance(step.ms);
              continue;
            }
            const expected = modelStep(model, clock.now(), step);
            model = expected.records;
            const got = await apply(records, step);
            expect(got).toEqual(expected.answer);
            seen.add(`${step.op}:${typeof got === 'boolean' ? got : got.outcome}`);
            // Bounded: expired records are gone once a sweep passed (sweeping every begin: only live ones and the newest).
            if (sweepMin === 1 && step.op === 'begin') expect(records.size).toBeLessThanOrEqual(KEYS.length);
          }
        }),
        { numRuns: 300 },
      );
      // Every answer of every operation happened.
      for (const a of ['acquired', 'completed', 'in-progress', 'mismatch'])
        expect(seen).toContain(`begin:${a}`);
      for (const op of ['renew', 'complete', 'release']) {
        expect(seen).toContain(`${op}:true`);
        expect(seen).toContain(`${op}:false`);
      }
    });
  }
});

async function apply(records: MemoryIdempotencyRecords, step: ModelOp): Promise<ModelAnswer> {
  switch (step.op) {
    case 'begin': {
      const r = await records.idempotencyBegin({
        name: 'n',
        key: step.key,
        payloadHash: step.hash,
        token: step.token,
        leaseMs: step.leaseMs,
      });
      if (r.outcome === 'acquired') {
        expect(r.leaseExpiresAt).toBe(r.now + step.leaseMs);
        return { outcome: 'acquired', leaseExpiresAt: r.leaseExpiresAt };
      }
      if (r.outcome === 'completed') return { outcome: 'completed', value: r.value };
      if (r.outcome === 'in-progress') return { outcome: 'in-progress', retryAfterMs: r.retryAfterMs };
      return { outcome: 'mismatch' };
    }
    case 'renew':
      return records.idempotencyRenew('n', step.key, step.token, step.leaseMs);
    case 'complete':
      return records.idempotencyComplete('n', step.key, step.token, step.value, step.ttlMs);
    case 'release':
      return records.idempotencyRelease('n', step.key, step.token);
  }
}

// --- run() under random interleavings ---------------------------------------------------------

type RunStep =
  | { op: 'call'; key: string; payload: number }
  | { op: 'finish'; caller: number; value: number }
  | { op: 'fail'; caller: number }
  | { op: 'crash'; caller: number }
  | { op: 'renew'; caller: number }
  | { op: 'advance'; ms: number };

const runStep: fc.Arbitrary<RunStep> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('call' as const),
      key: fc.constantFrom(...KEYS),
      payload: fc.constantFrom(1, 2),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('finish' as const), caller: fc.nat(20), value: fc.nat(100) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('fail' as const), caller: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('crash' as const), caller: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('renew' as const), caller: fc.nat(20) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.constantFrom(100, 400, 1_000, 2_000),
    }),
  },
);

const LEASE_MS = 1_000;
const TTL_MS = 3_000;
// Every microtask queued by a memory store call has run by the next macrotask.
const settle = () => new Promise((r) => setImmediate(r));

interface Caller {
  key: string;
  token: string;
  hash: string;
  /** Its fn is running (it acquired the key): the test finishes, fails or crashes it. */
  running?: { resolve: (v: number) => void; reject: (e: unknown) => void } | undefined;
  outcome?: { result?: RunResult<number>; error?: unknown } | undefined;
}

describe('createIdempotency().run against the model', () => {
  it('calls, completions, failures, crashes, renewals and clock steps: every answer is the model record’s', async () => {
    const outcomes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(runStep, { minLength: 10, maxLength: 60 }), async (steps) => {
        const clock = new FakeClock(0);
        const base = memoryStore({ clock });
        let lastToken = '';
        // Renewals from the renewer's timers are dropped (a lease of 1 000 fake ms would have them
        // fire on real time): the test renews, by `renew` steps, for the holders it chooses.
        const store = wrapStore(base, {
          idempotencyBegin: (cmd) => {
            lastToken = cmd.token;
            return base.idempotencyBegin!(cmd);
          },
          idempotencyRenew: async () => true,
        });
        const idem = createIdempotency({ store, lease: LEASE_MS, ttl: TTL_MS });
        let model: ModelRecords = new Map();
        const callers: Caller[] = [];
        const live = (i: number) => {
          const running = callers.filter((c) => c.running !== undefined);
          return running.length === 0 ? undefined : running[i % running.length];
        };
        for (const step of steps) {
          switch (step.op) {
            case 'call': {
              const hash = payloadHash(step.payload);
              const caller: Caller = { key: step.key, token: '', hash };
              callers.push(caller);
              idem
                .run(
                  { key: step.key, payload: step.payload },
                  () =>
                    new Promise<number>((resolve, reject) => {
                      caller.running = { resolve, reject };
                    }),
                )
                .then(
                  (result) => void (caller.outcome = { result }),
                  (error) => void (caller.outcome = { error }),
                );
              caller.token = lastToken;
              const expected = modelStep(model, clock.now(), {
                op: 'begin',
                key: step.key,
                hash,
                token: caller.token,
                leaseMs: LEASE_MS,
              });
              model = expected.records;
              await settle();
              const a = expected.answer as Exclude<ModelAnswer, boolean>;
              if (a.outcome === 'acquired') {
                expect(caller.running).toBeDefined();
                expect(caller.outcome).toBeUndefined();
              } else {
                expect(caller.running).toBeUndefined();
                const r = caller.outcome?.result;
                if (a.outcome === 'completed')
                  expect(r).toEqual({ outcome: 'replayed', value: JSON.parse(a.value) });
                else expect(r).toEqual(a);
                count(outcomes, r?.outcome ?? '?');
              }
              break;
            }
            case 'finish':
            case 'fail': {
              const caller = live(step.caller);
              if (caller?.running === undefined) break;
              const op: ModelOp =
                step.op === 'finish'
                  ? {
                      op: 'complete',
                      key: caller.key,
                      token: caller.token,
                      value: JSON.stringify(step.value),
                      ttlMs: TTL_MS,
                    }
                  : { op: 'release', key: caller.key, token: caller.token };
              const expected = modelStep(model, clock.now(), op);
              model = expected.records;
              const boom = new Error('fn failed');
              if (step.op === 'finish') caller.running.resolve(step.value);
              else caller.running.reject(boom);
              caller.running = undefined;
              await settle();
              if (step.op === 'fail') {
                expect(caller.outcome?.error).toBe(boom);
                count(outcomes, 'failed');
              } else if (expected.answer === true) {
                expect(caller.outcome?.result).toEqual({ outcome: 'executed', value: step.value });
                count(outcomes, 'executed');
              } else {
                const err = caller.outcome?.error;
                expect(isOnceflowError(err, 'ERR_LEASE_LOST')).toBe(true);
                count(outcomes, 'lease-lost');
              }
              break;
            }
            case 'crash': {
              // The holder stops: its fn never returns, it never renews again.
              const caller = live(step.caller);
              if (caller !== undefined) caller.running = undefined;
              break;
            }
            case 'renew': {
              const caller = live(step.caller);
              if (caller === undefined) break;
              const expected = modelStep(model, clock.now(), {
                op: 'renew',
                key: caller.key,
                token: caller.token,
                leaseMs: LEASE_MS,
              });
              model = expected.records;
              expect(await base.idempotencyRenew!(idem.name, caller.key, caller.token, LEASE_MS)).toBe(
                expected.answer,
              );
              break;
            }
            case 'advance':
              clock.advance(step.ms);
              break;
          }
        }
      }),
      { numRuns: 200 },
    );
    for (const o of ['executed', 'replayed', 'in-progress', 'mismatch', 'failed', 'lease-lost']) {
      expect(outcomes.get(o) ?? 0, o).toBeGreaterThan(20);
    }
  });
});

function count(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}
