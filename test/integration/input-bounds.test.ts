// Every size bound of the ledger (LIMITS), at the bound and one byte over, on the memory and the
// Redis store: over is refused with ERR_INVALID_ARGUMENT naming the field and the bound before
// any store call; at the bound is applied. Sizes are UTF-8 bytes: '€' is 3 of them, 1 UTF-16 unit.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createLedger,
  createLimiter,
  createReorderer,
  createTenantRegistry,
  type LedgerEntry,
  LIMITS,
  memoryStore,
  Snowflake,
  type Store,
  VersionGate,
} from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { wrapStore } from '../../src/testing/wrap-store.js';
import { rejected } from '../support/thrown.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

/** A string of exactly `bytes` UTF-8 bytes, mostly 3-byte characters (fewer UTF-16 units than bytes). */
function ofBytes(bytes: number): string {
  const euros = Math.floor(bytes / 3);
  return '€'.repeat(euros) + 'x'.repeat(bytes - 3 * euros);
}

interface Case {
  readonly what: string;
  readonly path: string;
  readonly limit: keyof typeof LIMITS;
  /** An entry whose bounded part has exactly `bytes` bytes. */
  readonly entry: (bytes: number, i: number) => LedgerEntry;
}

const cases: Case[] = [
  {
    what: 'signature',
    path: 'signature',
    limit: 'signatureBytes',
    entry: (n, i) => ({ owner: `o${i}`, signature: ofBytes(n), deltas: { coins: 1 } }),
  },
  {
    what: 'owner',
    path: 'owner',
    limit: 'ownerBytes',
    entry: (n, i) => ({ owner: ofBytes(n - 1) + String(i % 10), signature: 's', deltas: { coins: 1 } }),
  },
  {
    what: 'scope',
    path: 'scope',
    limit: 'scopeBytes',
    entry: (n, i) => ({ owner: `o${i}`, signature: 's', deltas: { coins: 1 }, scope: ofBytes(n) }),
  },
  {
    what: 'delta field',
    path: 'deltas',
    limit: 'fieldBytes',
    entry: (n, i) => ({ owner: `o${i}`, signature: 's', deltas: { [ofBytes(n)]: 1 } }),
  },
  {
    what: 'meta (as JSON: the quotes count)',
    path: 'meta',
    limit: 'metaBytes',
    entry: (n, i) => ({ owner: `o${i}`, signature: 's', deltas: { coins: 1 }, meta: ofBytes(n - 2) }),
  },
];

/** A wrapper of `fn` that counts its calls in `counter`. */
function counting<A extends unknown[], R>(counter: { n: number }, fn: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    counter.n++;
    return fn(...args);
  };
}

function counted(store: Store): { store: Store; calls: () => number } {
  const counter = { n: 0 };
  const spy = wrapStore(store, {
    ledgerApply: counting(counter, (cmd) => store.ledgerApply(cmd)),
    ledgerBalances: counting(counter, (l, o) => store.ledgerBalances(l, o)),
    ledgerWindow: counting(counter, (l, o) => store.ledgerWindow(l, o)),
    ledgerJournal: counting(counter, (l, q) => store.ledgerJournal(l, q)),
    ledgerScopeTotals: counting(counter, (l, sc) => store.ledgerScopeTotals(l, sc)),
  });
  return { store: spy, calls: () => counter.n };
}

describe('ledger input bounds (LIMITS)', () => {
  const client = new Redis(REDIS_URL);
  const prefix = runPrefix('bounds');
  afterAll(async () => {
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  const stores: [string, () => Store][] = [
    ['memory', () => memoryStore()],
    ['redis', () => createRedisStore({ client, prefix: `${prefix}${Math.random().toString(36).slice(2)}:` })],
  ];

  for (const [kind, make] of stores) {
    describe(kind, () => {
      for (const [i, c] of cases.entries()) {
        it(`${c.what}: ${LIMITS[c.limit]} bytes applied, one more refused before any store call`, async () => {
          const base = make();
          const { store, calls } = counted(base);
          const ledger = createLedger({ store, capacity: 4 });
          const over = c.entry(LIMITS[c.limit] + 1, i);
          const err = await rejected(ledger.apply(over));
          expect(err).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path: c.path });
          expect((err as Error).message).toContain(`at most ${LIMITS[c.limit]} bytes`);
          expect((err as Error).message).toContain(`LIMITS.${c.limit}`);
          expect((err as Error).message).toContain(`has ${LIMITS[c.limit] + 1})`);
          expect(calls()).toBe(0);
          // Nothing changed: the owner has no state (read from the unwrapped store).
          expect(await base.ledgerWindow('default', over.owner)).toStrictEqual({ signatures: [] });
          // A direct caller of the store is refused too, before the command reaches Redis.
          const direct = await rejected(
            base.ledgerApply({
              ledger: 'default',
              capacity: 4,
              horizon: true,
              owner: over.owner,
              signature: over.signature,
              deltas: Object.entries(over.deltas).map(([f, a]) => [f, BigInt(a)] as const),
              scope: over.scope,
              meta: over.meta,
            }),
          );
          expect(direct).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path: c.path });
          const at = c.entry(LIMITS[c.limit], i);
          expect((await ledger.apply(at)).outcome).toBe('applied');
          expect(calls()).toBe(1);
        });
      }

      it('reads refuse an owner or scope over its bound before any store call', async () => {
        const { store, calls } = counted(make());
        const ledger = createLedger({ store, capacity: 4 });
        const owner = ofBytes(LIMITS.ownerBytes + 1);
        const scope = ofBytes(LIMITS.scopeBytes + 1);
        for (const [path, call] of [
          ['owner', () => ledger.balances(owner)],
          ['owner', () => ledger.window(owner)],
          ['query.owner', () => ledger.journal({ owner })],
          ['query.scope', () => ledger.journal({ scope })],
          ['scope', () => ledger.totals(scope)],
        ] as const) {
          expect(await rejected(call())).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path });
        }
        expect(calls()).toBe(0);
      });
    });
  }

  it('counts UTF-8 bytes, not UTF-16 units: 342 x € (1026 bytes, 342 units) is over', async () => {
    const ledger = createLedger({ capacity: 4 });
    const signature = '€'.repeat(342);
    expect(signature.length).toBeLessThan(LIMITS.signatureBytes);
    expect(await rejected(ledger.apply({ owner: 'p', signature, deltas: {} }))).toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      path: 'signature',
    });
    // An astral character is 2 units and 4 bytes.
    const astral = '😀'.repeat(LIMITS.signatureBytes / 4);
    expect((await ledger.apply({ owner: 'p', signature: astral, deltas: {} })).outcome).toBe('applied');
    expect(await rejected(ledger.apply({ owner: 'p', signature: `${astral}x`, deltas: {} }))).toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
  });
});

describe('names and keys of the other parts (LIMITS.nameBytes, keyBytes, valueBytes)', () => {
  it('a ledger, limiter, limit id and version gate name over nameBytes is an invalid option', () => {
    const name = 'n'.repeat(LIMITS.nameBytes + 1);
    const store = memoryStore();
    expect(() => createLedger({ capacity: 4, name })).toThrow(expect.objectContaining({ option: 'name' }));
    expect(() => createLedger({ capacity: 4, name: name.slice(1) })).not.toThrow();
    expect(() => createLimiter({ store, algorithm: 'gcra', limit: 5, window: '1s', name })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'name' }),
    );
    expect(() => createLimiter({ store, algorithm: 'gcra', limit: 5, window: '1s', id: name })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'id' }),
    );
    expect(() => new VersionGate({ store, name })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'name' }),
    );
  });

  it('a checkpoint, snowflake clock and tenant named over nameBytes are refused before any store call', async () => {
    const name = ofBytes(LIMITS.nameBytes + 1);
    const counter = { n: 0 };
    const base = memoryStore();
    const store = wrapStore(base, {
      checkpointLoad: counting(counter, (n: string) =>
        (base.checkpointLoad as NonNullable<Store['checkpointLoad']>)(n),
      ),
      leaseRenew: counting(counter, (n: string, run: string, ms: number, takeover: number | undefined) =>
        (base.leaseRenew as NonNullable<Store['leaseRenew']>)(n, run, ms, takeover),
      ),
    });
    const reorderer = createReorderer<string>({
      capacity: 4,
      gapTimeout: 1000,
      onRelease: () => {},
      checkpoint: { store, name },
    });
    expect(await rejected(reorderer)).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      option: 'checkpoint.name',
    });
    expect(await rejected(Snowflake.start({ worker: 1, store, name }))).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      option: 'name',
    });
    expect(counter.n).toBe(0);
    const tenants = createTenantRegistry({ store });
    expect(() => tenants.init(name, { algorithm: 'gcra', limit: 2, window: '1s' })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT', path: 'tenant' }),
    );
    expect(() => tenants.init(name.slice(1), { algorithm: 'gcra', limit: 2, window: '1s' })).not.toThrow();
  });

  it('a limiter subject over keyBytes is refused before any store call', async () => {
    const counter = { n: 0 };
    const base = memoryStore();
    const store = wrapStore(base, {
      limiterTake: counting(counter, (cmd: Parameters<NonNullable<Store['limiterTake']>>[0]) =>
        (base.limiterTake as NonNullable<Store['limiterTake']>)(cmd),
      ),
    });
    const limiter = createLimiter({ store, algorithm: 'gcra', limit: 5, window: '1s' });
    const key = ofBytes(LIMITS.keyBytes + 1);
    expect(await rejected(limiter.take(key))).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path: 'key' });
    expect(await rejected(limiter.take({ key }))).toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      path: 'key.key',
    });
    expect(counter.n).toBe(0);
    expect((await limiter.take(ofBytes(LIMITS.keyBytes))).allowed).toBe(true);
    expect(counter.n).toBe(1);
  });

  it('a version gate key over keyBytes and a value over valueBytes are refused before any store call', async () => {
    const counter = { n: 0 };
    const base = memoryStore();
    const store = wrapStore(base, {
      versionUpsert: counting(counter, (g: string, k: string, v: string, value: string) =>
        (base.versionUpsert as NonNullable<Store['versionUpsert']>)(g, k, v, value),
      ),
      versionGet: counting(counter, (g: string, k: string) =>
        (base.versionGet as NonNullable<Store['versionGet']>)(g, k),
      ),
    });
    const gate = new VersionGate({ store });
    const key = ofBytes(LIMITS.keyBytes + 1);
    expect(await rejected(gate.upsert(key, 1, 'v'))).toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      path: 'key',
    });
    expect(await rejected(gate.get(key))).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path: 'key' });
    const value = ofBytes(LIMITS.valueBytes - 1); // + 2 quotes
    expect(await rejected(gate.upsert('k', 1, value))).toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      path: 'value',
    });
    expect(counter.n).toBe(0);
    expect((await gate.upsert('k', 1, value.slice(1))).outcome).toBe('applied');
  });
});
