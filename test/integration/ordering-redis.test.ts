import fc from 'fast-check';
import { type Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createReorderer,
  FakeClock,
  memoryStore,
  type Release,
  Snowflake,
  type Store,
  VersionGate,
} from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

type Op =
  | { kind: 'upsert'; gate: string; key: string; version: bigint; value: string }
  | { kind: 'get'; gate: string; key: string }
  | { kind: 'save'; name: string; revision: number; data: string }
  | { kind: 'load'; name: string }
  | { kind: 'advance'; name: string; ms: number }
  | { kind: 'lease'; name: string; run: string; ms: number; takeover: number | undefined };

const gate = fc.constantFrom('users', 'u{1}', 'a:b');
const key = fc.constantFrom('k1', 'k2', 'k|3', 'ü');
const name = fc.constantFrom('p0', 'p{1}', 'x:y');
// Versions around the edges where a double would compare wrongly (2^53) and beyond 64 bits.
const version = fc.oneof(
  fc.bigInt({ min: -3n, max: 5n }),
  fc.constantFrom(2n ** 53n, 2n ** 53n + 1n, 2n ** 63n, 10n ** 20n, -(10n ** 20n)),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }),
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('upsert' as const), gate, key, version, value: fc.string({ maxLength: 8 }) }),
  fc.record({ kind: fc.constant('get' as const), gate, key }),
  fc.record({
    kind: fc.constant('save' as const),
    name,
    revision: fc.oneof(fc.nat(6), fc.constant(2 ** 53 - 1)),
    data: fc.string({ maxLength: 8 }),
  }),
  fc.record({ kind: fc.constant('load' as const), name }),
  fc.record({
    kind: fc.constant('advance' as const),
    name,
    ms: fc.oneof(fc.constant(-1), fc.nat(10), fc.constant(1_767_225_600_000)),
  }),
  fc.record({
    kind: fc.constant('lease' as const),
    name,
    run: fc.constantFrom('r1', 'r2'),
    ms: fc.oneof(fc.nat(10), fc.constant(1_767_225_600_000), fc.constant(2 ** 53 - 1)),
    takeover: fc.option(fc.oneof(fc.nat(10), fc.constant(1_767_225_600_000)), { nil: undefined }),
  }),
);

async function runOp(store: Store, op: Op): Promise<unknown> {
  switch (op.kind) {
    case 'upsert':
      return store.versionUpsert?.(op.gate, op.key, op.version.toString(), op.value);
    case 'get':
      return store.versionGet?.(op.gate, op.key);
    case 'save':
      return store.checkpointSave?.(op.name, op.revision, op.data);
    case 'load':
      return store.checkpointLoad?.(op.name);
    case 'advance':
      return store.timestampAdvance?.(op.name, op.ms);
    case 'lease':
      return store.leaseRenew?.(op.name, op.run, op.ms, op.takeover);
  }
}

const clients: { label: string; make: () => Redis | Cluster }[] = [
  { label: 'standalone', make: () => new Redis(REDIS_URL) },
  { label: 'cluster', make: () => clusterClient() },
];

for (const { label, make } of clients) {
  describe(`ordering on Redis (${label})`, () => {
    const client = make();
    const prefixes: string[] = [];
    const fresh = (what: string) => {
      const prefix = runPrefix(`ordering-${label}-${what}`);
      prefixes.push(prefix);
      return createRedisStore({ client, prefix });
    };
    afterAll(async () => {
      for (const p of prefixes) await cleanupPrefix(client, p);
      await client.quit();
    });

    it('version gate, checkpoints, snowflake clocks and leases answer exactly as the memory model', async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), async (ops) => {
          const model = memoryStore();
          const redis = fresh(`model-${run++}`);
          for (const op of ops) expect(await runOp(redis, op)).toEqual(await runOp(model, op));
        }),
        { numRuns: 40 },
      );
    });

    it('concurrent upserts from many writers converge on the newest version, and never go back', async () => {
      const store = fresh('race');
      const other = make();
      const second = createRedisStore({ client: other, prefix: prefixes[prefixes.length - 1] as string });
      const a = new VersionGate({ store, name: 'rows' });
      const b = new VersionGate({ store: second, name: 'rows' });
      const versions = Array.from({ length: 200 }, (_, i) => (i * 7919) % 200);
      const results = await Promise.all(versions.map((v, i) => (i % 2 ? a : b).upsert('row-1', v, { v })));
      await other.quit();
      expect(await a.get('row-1')).toEqual({ version: 199n, value: { v: 199 } });
      // Each applied write was newer than everything applied before it.
      const applied = results.filter((r) => r.outcome === 'applied').map((r) => r.version);
      expect(applied).toEqual([...applied].sort((x, y) => (x < y ? -1 : 1)));
      expect(new Set(applied).size).toBe(applied.length);
    });

    it('a checkpoint save sent twice (a re-send after a lost reply) is saved both times, a save of another run is stale', async () => {
      for (const store of [memoryStore(), fresh('resend')]) {
        expect(await store.checkpointSave?.('cp', 1, '{"a":1}')).toBe('saved');
        expect(await store.checkpointSave?.('cp', 2, '{"a":2}')).toBe('saved');
        expect(await store.checkpointSave?.('cp', 2, '{"a":2}')).toBe('saved'); // the same command again
        expect(await store.checkpointSave?.('cp', 2, '{"b":9}')).toBe('stale'); // another run, same revision
        expect(await store.checkpointSave?.('cp', 1, '{"a":1}')).toBe('stale'); // an older save, late
        expect(await store.checkpointLoad?.('cp')).toEqual({ revision: 2, data: '{"a":2}' });
      }
    });

    it('a restarted consumer continues from its Redis checkpoint', async () => {
      const store = fresh('checkpoint');
      const seen: [number, boolean][] = [];
      const options = {
        capacity: 64,
        gapTimeout: '1m' as const,
        checkpoint: { store, name: 'cdc:public.users', every: 2 },
        onRelease: (r: Release<{ id: number }>) => void seen.push([r.seq, r.late]),
      };
      const first = await createReorderer<{ id: number }>(options);
      for (const s of [0, 1, 3, 5]) first.push(s, { id: s });
      await first.checkpoint();
      const second = await createReorderer<{ id: number }>(options); // the first one "crashed"
      expect(second.buffer.next).toBe(2);
      expect(second.push(1, { id: 1 }).outcome).toBe('duplicate');
      expect(second.push(2, { id: 2 }).map((r) => r.seq)).toEqual([2, 3]);
      expect(second.push(4, { id: 4 }).map((r) => r.seq)).toEqual([4, 5]);
      await second.close();
      expect(seen).toEqual([0, 1, 2, 3, 4, 5].map((s) => [s, false]));
    });

    it('a snowflake generator restarted with a clock behind its persisted lease is refused', async () => {
      const store = fresh('snowflake');
      const t0 = Date.UTC(2026, 0, 1);
      const clock = new FakeClock(t0);
      const first = await Snowflake.start({ worker: 9, store, name: 'orders', clock, lease: '1s' });
      const id = first.next();
      const behind = new FakeClock(t0 - 60_000);
      await expect(
        Snowflake.start({ worker: 9, store, name: 'orders', clock: behind }),
      ).rejects.toMatchObject({
        code: 'ERR_CLOCK_ROLLBACK',
      });
      const later = new FakeClock(t0 + 5_000);
      const second = await Snowflake.start({ worker: 9, store, name: 'orders', clock: later });
      expect(second.next() > id).toBe(true);
      first.close();
      second.close();
    });

    it('a second live generator under one name is refused: the store records the run holding it', async () => {
      const store = fresh('snowflake-twin');
      const first = await Snowflake.start({ worker: 4, store, name: 'ids', lease: '200ms' });
      first.next();
      // The twin reads the lease and waits it out while the first, in use, renews it at half-time.
      const busy = setInterval(() => first.next(), 10);
      const err = await Snowflake.start({ worker: 4, store, name: 'ids', lease: '200ms' }).catch(
        (e: unknown) => e,
      );
      clearInterval(busy);
      expect(err).toMatchObject({ code: 'ERR_STORE' });
      expect(String(err)).toMatch(/another run holds 'ids'/);
      expect(typeof first.next()).toBe('bigint');
      first.close();
    });
  });
}
