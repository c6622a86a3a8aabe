/**
 * The ordering conformance cases (version gates, reorder checkpoints, snowflake clocks and
 * leases: the optional operations of `OrderingStoreOps`), as plain data. Names and keys are the
 * case's own (the kit prefixes them), so cases never see each other's state. A `race` step sends
 * its calls at once: an operation that reads, then writes in a second step lets two of them win.
 */

/** A stored version and value, or `null` for none. */
export type StoredVersion = { version: string; value: string } | null;

/** One step of an ordering case. `name` (a gate, checkpoint or generator) defaults to `'n'`. */
export type OrderingStep =
  | {
      op: 'version-upsert';
      name?: string;
      key: string;
      version: string;
      value: string;
      expect: { outcome: 'applied' | 'duplicate' | 'stale'; version: string };
    }
  | { op: 'version-get'; name?: string; key: string; expect: StoredVersion }
  | {
      /** Upserts of one version with different values, all at once: exactly one is applied. */
      op: 'version-race';
      name?: string;
      key: string;
      version: string;
      values: string[];
    }
  | { op: 'checkpoint-save'; name?: string; revision: number; data: string; expect: 'saved' | 'stale' }
  | { op: 'checkpoint-load'; name?: string; expect: { revision: number; data: string } | null }
  | {
      /** Saves of one revision with different data, all at once: exactly one is saved. */
      op: 'checkpoint-race';
      name?: string;
      revision: number;
      datas: string[];
    }
  | { op: 'timestamp-advance'; name?: string; ms: number; expect: number }
  | {
      op: 'lease-renew';
      name?: string;
      run: string;
      ms: number;
      /** The lease a new run read and waited out (-1: none); absent to renew. */
      takeover?: number;
      expect: { held: boolean; ms: number };
    }
  | {
      /** New runs taking the name over at once, each from the lease it read: exactly one holds it. */
      op: 'lease-race';
      name?: string;
      runs: string[];
      ms: number;
      takeover: number;
    };

/** One ordering case: the steps in order on a fresh set of names. */
export interface OrderingCase {
  suite: 'version-gate' | 'checkpoint' | 'snowflake-clock';
  name: string;
  /** Which rule of DESIGN §3.4 the case pins down. */
  rule: string;
  steps: OrderingStep[];
}

type Upsert = Extract<OrderingStep, { op: 'version-upsert' }>;
const upsert = (
  key: string,
  version: string,
  value: string,
  outcome: Upsert['expect']['outcome'],
  stored: string,
  name?: string,
): Upsert => ({
  op: 'version-upsert',
  key,
  version,
  value,
  expect: { outcome, version: stored },
  ...(name === undefined ? {} : { name }),
});

/** The cases. Add to them when a rule is added; never edit one to make a store pass. */
export const orderingCases: readonly OrderingCase[] = deepFreeze<OrderingCase[]>([
  {
    suite: 'version-gate',
    name: 'version-newer-wins',
    rule: 'an upsert is stored only when its version is above the stored one; equal is a duplicate, older is stale, and neither changes the value',
    steps: [
      { op: 'version-get', key: 'k', expect: null },
      upsert('k', '5', 'five', 'applied', '5'),
      { op: 'version-get', key: 'k', expect: { version: '5', value: 'five' } },
      upsert('k', '5', 'other five', 'duplicate', '5'),
      upsert('k', '4', 'four', 'stale', '5'),
      { op: 'version-get', key: 'k', expect: { version: '5', value: 'five' } },
      upsert('k', '6', 'six', 'applied', '6'),
      { op: 'version-get', key: 'k', expect: { version: '6', value: 'six' } },
    ],
  },
  {
    suite: 'version-gate',
    name: 'version-compare-exact',
    rule: 'versions compare as integers of any size: numerically, not as text, beyond 2^53, and below zero',
    steps: [
      upsert('big', '9007199254740992', 'a', 'applied', '9007199254740992'),
      upsert('big', '9007199254740993', 'b', 'applied', '9007199254740993'),
      upsert('big', '9007199254740992', 'c', 'stale', '9007199254740993'),
      // Longer is larger, though '9' > '1' as text.
      upsert('big', '10000000000000000000', 'd', 'applied', '10000000000000000000'),
      upsert('big', '9999999999999999999', 'e', 'stale', '10000000000000000000'),
      upsert('neg', '-12', 'a', 'applied', '-12'),
      upsert('neg', '-3', 'b', 'applied', '-3'),
      upsert('neg', '-20', 'c', 'stale', '-3'),
      upsert('neg', '0', 'd', 'applied', '0'),
      { op: 'version-get', key: 'big', expect: { version: '10000000000000000000', value: 'd' } },
      { op: 'version-get', key: 'neg', expect: { version: '0', value: 'd' } },
    ],
  },
  {
    suite: 'version-gate',
    name: 'version-keys-and-gates-independent',
    rule: 'each key of each gate has its own version',
    steps: [
      upsert('k', '10', 'g1', 'applied', '10', 'g1'),
      upsert('k', '2', 'g2', 'applied', '2', 'g2'),
      upsert('j', '1', 'j', 'applied', '1', 'g1'),
      { op: 'version-get', name: 'g1', key: 'k', expect: { version: '10', value: 'g1' } },
      { op: 'version-get', name: 'g2', key: 'k', expect: { version: '2', value: 'g2' } },
      { op: 'version-get', name: 'g2', key: 'j', expect: null },
    ],
  },
  {
    suite: 'version-gate',
    name: 'version-upsert-atomic',
    rule: 'racing upserts of one version: exactly one is applied, and its value is the one stored',
    steps: [
      upsert('k', '1', 'first', 'applied', '1'),
      { op: 'version-race', key: 'k', version: '2', values: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] },
      { op: 'version-race', key: 'fresh', version: '7', values: ['a', 'b', 'c', 'd'] },
    ],
  },
  {
    suite: 'checkpoint',
    name: 'checkpoint-revision-monotonic',
    rule: 'a checkpoint is saved only above the stored revision; the same save again is saved, another of that revision or an older one is stale',
    steps: [
      { op: 'checkpoint-load', expect: null },
      { op: 'checkpoint-save', revision: 1, data: '{"a":1}', expect: 'saved' },
      { op: 'checkpoint-load', expect: { revision: 1, data: '{"a":1}' } },
      // A client re-sending a save whose reply it lost.
      { op: 'checkpoint-save', revision: 1, data: '{"a":1}', expect: 'saved' },
      { op: 'checkpoint-save', revision: 1, data: '{"b":1}', expect: 'stale' },
      { op: 'checkpoint-save', revision: 0, data: '{"z":0}', expect: 'stale' },
      { op: 'checkpoint-save', revision: 3, data: '{"c":3}', expect: 'saved' },
      { op: 'checkpoint-save', revision: 2, data: '{"d":2}', expect: 'stale' },
      { op: 'checkpoint-load', expect: { revision: 3, data: '{"c":3}' } },
      { op: 'checkpoint-save', name: 'other', revision: 1, data: '{}', expect: 'saved' },
      { op: 'checkpoint-load', name: 'other', expect: { revision: 1, data: '{}' } },
      { op: 'checkpoint-load', expect: { revision: 3, data: '{"c":3}' } },
    ],
  },
  {
    suite: 'checkpoint',
    name: 'checkpoint-save-atomic',
    rule: 'racing saves of one revision by different runs: exactly one is saved, and its data is the one loaded',
    steps: [
      { op: 'checkpoint-save', revision: 1, data: 'one', expect: 'saved' },
      { op: 'checkpoint-race', revision: 2, datas: ['a', 'b', 'c', 'd', 'e', 'f'] },
    ],
  },
  {
    suite: 'snowflake-clock',
    name: 'timestamp-never-lowered',
    rule: "a generator's persisted last timestamp only rises; -1 reads it (-1 when none)",
    steps: [
      { op: 'timestamp-advance', ms: -1, expect: -1 },
      { op: 'timestamp-advance', ms: 1000, expect: 1000 },
      { op: 'timestamp-advance', ms: 999, expect: 1000 },
      { op: 'timestamp-advance', ms: -1, expect: 1000 },
      { op: 'timestamp-advance', ms: 1001, expect: 1001 },
      { op: 'timestamp-advance', name: 'other', ms: -1, expect: -1 },
    ],
  },
  {
    suite: 'snowflake-clock',
    name: 'lease-one-live-run',
    rule: 'one run holds a name: it renews (never lowering the lease), a second live run is refused, and takes over only from the very lease it read and waited out',
    steps: [
      // A first run takes a fresh name (it read -1).
      { op: 'lease-renew', run: 'r1', ms: 1000, takeover: -1, expect: { held: true, ms: 1000 } },
      { op: 'lease-renew', run: 'r1', ms: 2000, expect: { held: true, ms: 2000 } },
      { op: 'lease-renew', run: 'r1', ms: 1500, expect: { held: true, ms: 2000 } },
      // A second run while r1 lives: refused, told r1's lease.
      { op: 'lease-renew', run: 'r2', ms: 3000, expect: { held: false, ms: 2000 } },
      { op: 'lease-renew', run: 'r2', ms: 3000, takeover: -1, expect: { held: false, ms: 2000 } },
      // It read 1000, waited it out, but r1 renewed meanwhile: refused.
      { op: 'lease-renew', run: 'r2', ms: 3000, takeover: 1000, expect: { held: false, ms: 2000 } },
      // It read 2000 and nobody renewed since: it takes the name over.
      { op: 'lease-renew', run: 'r2', ms: 3000, takeover: 2000, expect: { held: true, ms: 3000 } },
      // The old run has lost it for good.
      { op: 'lease-renew', run: 'r1', ms: 4000, expect: { held: false, ms: 3000 } },
      { op: 'lease-renew', run: 'r2', ms: 2500, expect: { held: true, ms: 3000 } },
      { op: 'timestamp-advance', ms: -1, expect: 3000 },
      { op: 'lease-renew', name: 'other', run: 'r1', ms: 10, expect: { held: false, ms: -1 } },
    ],
  },
  {
    suite: 'snowflake-clock',
    name: 'lease-takeover-atomic',
    rule: 'new runs racing to take a name over from the lease they all read: exactly one holds it',
    steps: [
      { op: 'lease-race', runs: ['a', 'b', 'c', 'd', 'e'], ms: 5000, takeover: -1 },
      { op: 'lease-renew', run: 'r1', ms: 1000, takeover: -1, expect: { held: true, ms: 1000 }, name: 'm' },
      { op: 'lease-race', name: 'm', runs: ['a', 'b', 'c', 'd'], ms: 6000, takeover: 1000 },
    ],
  },
]);

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
