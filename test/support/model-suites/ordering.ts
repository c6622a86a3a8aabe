// The ordering operations of a store (version gates, checkpoints, snowflake clocks and leases)
// step by step against memoryOrderingOps, the reference model: every answer must be the model's.
// None of them reads a clock, so the comparison is exact. Racing upserts and saves are in the
// conformance kit (version-upsert-atomic, checkpoint-save-atomic, lease-takeover-atomic); here,
// random sequences reach the edges: versions beyond 2^53 and below zero, the same save re-sent, a
// lease renewed, refused, taken over from a stale or the current value. Each store names its
// gates, keys, checkpoints and clocks with the text that stresses its own encoding.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryOrderingOps } from '../../../src/store/memory/ordering.js';
import type { Store } from '../../../src/store/store.js';
import { runsFor, type StoreTarget } from './target.js';

/** Two names of each kind (the generated commands pick one by index). */
export interface OrderingNames {
  readonly gates: readonly [string, string];
  readonly keys: readonly [string, string];
  readonly checkpoints: readonly [string, string];
  readonly clocks: readonly [string, string];
}

type Command =
  | { op: 'upsert'; gate: number; key: number; version: bigint; value: string }
  | { op: 'get'; gate: number; key: number }
  | { op: 'save'; name: number; revision: number; data: string }
  | { op: 'load'; name: number }
  | { op: 'advance'; name: number; ms: number }
  | { op: 'renew'; name: number; run: string; ms: number; takeover: number | undefined };

// Versions from a small pool collide (duplicates, stale ones), around 2^53 where a double would
// compare wrongly, and with different lengths where text order differs from numeric order; and
// any bigint, for the long tail.
const version = fc.oneof(
  fc.constantFrom(-20n, -3n, -1n, 0n, 1n, 9n, 10n, 2n ** 53n, 2n ** 53n + 1n, 10n ** 19n, 10n ** 19n - 1n),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }),
);
const ms = fc.constantFrom(-1, 0, 999, 1000, 1001, 2000, 2 ** 53 - 1);
const text = fc.constantFrom('', '{"a":1}', 'é😀', 'nul\u0000inside', 'x'.repeat(300));
// Revisions from -1: below the first a reorderer writes, and a first save at it is saved.
const commands: fc.Arbitrary<Command[]> = fc.array(
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('upsert' as const),
        gate: fc.nat(1),
        key: fc.nat(1),
        version,
        value: text,
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({ op: fc.constant('get' as const), gate: fc.nat(1), key: fc.nat(1) }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('save' as const),
        name: fc.nat(1),
        revision: fc.integer({ min: -1, max: 4 }),
        data: text,
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('load' as const), name: fc.nat(1) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('advance' as const), name: fc.nat(1), ms }) },
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('renew' as const),
        name: fc.nat(1),
        run: fc.constantFrom('r1', 'r2', ''),
        ms,
        takeover: fc.option(ms, { nil: undefined }),
      }),
    },
  ),
  { minLength: 1, maxLength: 30 },
);

const everyAnswer: Command[] = [
  { op: 'upsert', gate: 0, key: 0, version: 1n, value: 'v' },
  { op: 'upsert', gate: 0, key: 0, version: 1n, value: 'v' },
  { op: 'upsert', gate: 0, key: 0, version: 0n, value: 'v' },
  { op: 'save', name: 0, revision: 1, data: 'd' },
  { op: 'save', name: 0, revision: 0, data: 'd' },
  { op: 'renew', name: 0, run: 'r1', ms: 1000, takeover: -1 },
  { op: 'renew', name: 0, run: 'r1', ms: 1001, takeover: undefined },
  { op: 'renew', name: 0, run: 'r2', ms: 2000, takeover: undefined },
  { op: 'renew', name: 0, run: 'r2', ms: 2000, takeover: -1 },
];

/** The store's ordering operations: optional in the contract, present on every store this suite runs on. */
type OrderingStore = Required<
  Pick<
    Store,
    'versionUpsert' | 'versionGet' | 'checkpointSave' | 'checkpointLoad' | 'timestampAdvance' | 'leaseRenew'
  >
>;

export function orderingModelSuite(target: StoreTarget, names: OrderingNames, extra?: () => void): void {
  describe(`ordering operations on ${target.label}, against the memory model`, () => {
    it('every step answers as memoryOrderingOps does', async () => {
      let runs = 0;
      const seen = new Set<string>();
      await fc.assert(
        fc.asyncProperty(commands, async (cmds) => {
          const prefix = `m${runs++}/`;
          const store = target.store() as OrderingStore;
          const memory = memoryOrderingOps();
          for (const c of cmds) {
            let got: unknown;
            let want: unknown;
            switch (c.op) {
              case 'upsert': {
                const args = [
                  `${prefix}${names.gates[c.gate]}`,
                  names.keys[c.key] as string,
                  c.version.toString(),
                  c.value,
                ] as const;
                got = await store.versionUpsert(...args);
                want = await memory.versionUpsert(...args);
                seen.add(`upsert:${(want as { outcome: string }).outcome}`);
                break;
              }
              case 'get':
                got = await store.versionGet(`${prefix}${names.gates[c.gate]}`, names.keys[c.key] as string);
                want = await memory.versionGet(
                  `${prefix}${names.gates[c.gate]}`,
                  names.keys[c.key] as string,
                );
                break;
              case 'save':
                got = await store.checkpointSave(`${prefix}${names.checkpoints[c.name]}`, c.revision, c.data);
                want = await memory.checkpointSave(
                  `${prefix}${names.checkpoints[c.name]}`,
                  c.revision,
                  c.data,
                );
                seen.add(`save:${want}`);
                break;
              case 'load':
                got = await store.checkpointLoad(`${prefix}${names.checkpoints[c.name]}`);
                want = await memory.checkpointLoad(`${prefix}${names.checkpoints[c.name]}`);
                break;
              case 'advance':
                got = await store.timestampAdvance(`${prefix}${names.clocks[c.name]}`, c.ms);
                want = await memory.timestampAdvance(`${prefix}${names.clocks[c.name]}`, c.ms);
                break;
              case 'renew': {
                const args = [`${prefix}${names.clocks[c.name]}`, c.run, c.ms, c.takeover] as const;
                got = await store.leaseRenew(...args);
                want = await memory.leaseRenew(...args);
                seen.add(
                  `renew:${(want as { held: boolean }).held}:${c.takeover === undefined ? 'renew' : 'take'}`,
                );
                break;
              }
            }
            expect({ step: c, got }).toEqual({ step: c, got: want });
          }
        }),
        // One sequence reaching every answer runs first, so the coverage check below does not rest on
        // what 120 random sequences happened to reach.
        { numRuns: runsFor(target, 120), examples: [[everyAnswer]] },
      );
      for (const answer of [
        'upsert:applied',
        'upsert:duplicate',
        'upsert:stale',
        'save:saved',
        'save:stale',
        'renew:true:renew',
        'renew:false:renew',
        'renew:true:take',
        'renew:false:take',
      ])
        expect(seen).toContain(answer);
    }, 120_000);
    extra?.();
  });
}
