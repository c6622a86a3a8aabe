// The Postgres store's idempotency records and ordering operations beyond the conformance kit:
// racing processes on their own connections, bad input refused before any SQL, cleanup, and
// statement names that stay apart however long the schema's name.
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/core/errors.js';
import { createPostgresStore, type PostgresStore } from '../../src/postgres/index.js';
import { dropSchema, runSchema, testPool, untouchablePool } from './pg-env.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Postgres idempotency records', () => {
  const pool = testPool(4);
  const schema = runSchema('idem');
  const store = createPostgresStore({ pool, schema });
  // Eight processes: a store each, on a pool of one connection each.
  const pools: pg.Pool[] = Array.from({ length: 8 }, () => testPool(1));
  const stores: PostgresStore[] = pools.map((p) => createPostgresStore({ pool: p, schema }));
  const schemas = [schema];
  afterAll(async () => {
    for (const p of pools) await p.end();
    for (const s of schemas) await dropSchema(pool, s);
    await pool.end();
  });

  const begin = (s: PostgresStore, key: string, token: string, leaseMs = 60_000, name = 'race') =>
    s.idempotencyBegin({ name, key, payloadHash: 'h', token, leaseMs });

  it('8 connections beginning one key at once: exactly one acquires, the others find it in progress', async () => {
    await Promise.all(stores.map((s) => s.versionGet('warm', 'up'))); // connect and migrate first
    for (let round = 0; round < 30; round++) {
      const key = `fresh-${round}`;
      const replies = await Promise.all(stores.map((s, i) => begin(s, key, `t${i}`)));
      expect(replies.filter((r) => r.outcome === 'acquired')).toHaveLength(1);
      expect(replies.filter((r) => r.outcome === 'in-progress')).toHaveLength(7);
      expect(replies.find((r) => r.outcome === 'acquired')).toMatchObject({ takeover: false });
    }
  });

  it('8 connections taking over one dead lease, or one expired value, at once: exactly one acquires', async () => {
    for (let round = 0; round < 10; round++) {
      const dead = `dead-${round}`;
      const expired = `expired-${round}`;
      expect(await begin(store, dead, 'holder', 20)).toMatchObject({ outcome: 'acquired' });
      expect(await begin(store, expired, 'holder', 60_000)).toMatchObject({ outcome: 'acquired' });
      expect(await store.idempotencyComplete('race', expired, 'holder', 'v', 20)).toBe(true);
      await sleep(50);
      for (const [key, takeover] of [
        [dead, true],
        [expired, false],
      ] as const) {
        const replies = await Promise.all(stores.map((s, i) => begin(s, key, `t${i}`)));
        const won = replies.filter((r) => r.outcome === 'acquired');
        expect(won).toHaveLength(1);
        expect(won[0]).toMatchObject({ takeover });
        expect(replies.filter((r) => r.outcome === 'in-progress')).toHaveLength(7);
        // The winner holds it; the old holder is fenced out.
        const winner = `t${replies.indexOf(won[0] as (typeof replies)[number])}`;
        expect(await store.idempotencyComplete('race', key, 'holder', 'late', 1000)).toBe(false);
        expect(await store.idempotencyComplete('race', key, winner, 'mine', 1000)).toBe(true);
        expect(await begin(store, key, 'next')).toMatchObject({ outcome: 'completed', value: 'mine' });
      }
    }
  });

  it('a value is kept byte for byte (U+0000, every plane) and a NUL in a text argument is refused', async () => {
    const value = '\u0000{"€":"✓"}\u0000😀\uffff';
    expect(await begin(store, 'bytes', 't1')).toMatchObject({ outcome: 'acquired' });
    expect(await store.idempotencyComplete('race', 'bytes', 't1', value, 60_000)).toBe(true);
    expect(await begin(store, 'bytes', 't2')).toEqual(
      expect.objectContaining({ outcome: 'completed', value }),
    );
    const err = await begin(store, 'nul\u0000key', 't1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({
      path: 'key',
      message: expect.stringContaining('PostgreSQL text cannot hold U+0000'),
    });
  });

  it('cleanup deletes at most `limit` expired records, oldest first, and never a live one or a dead lease within its slack', async () => {
    const name = 'clean';
    const s = runSchema('idem_clean');
    schemas.push(s);
    const own = createPostgresStore({ pool, schema: s });
    const b = (key: string, leaseMs: number) =>
      own.idempotencyBegin({ name, key, payloadHash: '', token: key, leaseMs });
    for (let i = 0; i < 5; i++) {
      await b(`done-${i}`, 60_000);
      expect(await own.idempotencyComplete(name, `done-${i}`, `done-${i}`, 'v', 30 + i)).toBe(true);
    }
    await b('dead-lease', 30); // dead after 30 ms, its row kept until 60 ms
    await b('slack', 300); // dead after 300 ms, kept until 600 ms
    await b('live', 60_000);
    await b('completed-live', 60_000);
    expect(await own.idempotencyComplete(name, 'completed-live', 'completed-live', 'v', 60_000)).toBe(true);
    await sleep(120);
    const keys = async () =>
      (await pool.query(`SELECT key FROM "${s}".idempotency ORDER BY key`)).rows.map((r) => r.key);
    expect(await own.cleanup({ limit: 2 })).toMatchObject({ idempotency: 2 });
    // Oldest expiry first: the first two completed ones.
    expect(await keys()).toEqual([
      'completed-live',
      'dead-lease',
      'done-2',
      'done-3',
      'done-4',
      'live',
      'slack',
    ]);
    const [x, y] = await Promise.all([own.cleanup({ limit: 1000 }), own.cleanup({ limit: 1000 })]);
    expect(x.idempotency + y.idempotency).toBe(4);
    expect(await keys()).toEqual(['completed-live', 'live', 'slack']);
    // The dead lease within its slack: refused to its holder, still there for a takeover.
    await sleep(200);
    expect(await own.idempotencyRenew(name, 'slack', 'slack', 1000)).toBe(false);
    expect(await own.cleanup()).toMatchObject({ idempotency: 0 });
    expect(await b('slack', 1000)).toMatchObject({ outcome: 'acquired', takeover: true });
  });

  it('bad input is a typed error naming the argument, before any SQL', async () => {
    const { pool: spy, calls } = untouchablePool();
    const bad = createPostgresStore({ pool: spy, schema: 'onceflow' });
    const base = { name: 'n', key: 'k', payloadHash: '', token: 't', leaseMs: 1000 };
    const cases: [() => Promise<unknown>, string][] = [
      [() => bad.idempotencyBegin({ ...base, key: 5 as never }), 'key'],
      [() => bad.idempotencyBegin({ ...base, name: 'x\ud800' }), 'name'],
      [() => bad.idempotencyBegin({ ...base, name: 'x\u0000' }), 'name'],
      [() => bad.idempotencyBegin({ ...base, token: undefined as never }), 'token'],
      [() => bad.idempotencyBegin({ ...base, token: 't\u0000' }), 'token'],
      [() => bad.idempotencyBegin({ ...base, payloadHash: '\u0000' }), 'payloadHash'],
      [() => bad.idempotencyBegin({ ...base, leaseMs: 2 ** 52 + 1 }), 'leaseMs'],
      [() => bad.idempotencyBegin({ ...base, leaseMs: 0 }), 'leaseMs'],
      [() => bad.idempotencyBegin({ ...base, leaseMs: 1.5 }), 'leaseMs'],
      [() => bad.idempotencyBegin(undefined as never), 'name'],
      [() => bad.idempotencyRenew('n', 'k', 't', Number.NaN), 'leaseMs'],
      [() => bad.idempotencyRenew('n', 'k\u0000', 't', 1000), 'key'],
      [() => bad.idempotencyComplete('n', 'k', 't', 'v\udc00', 1000), 'value'],
      [() => bad.idempotencyComplete('n', 'k', 't', 7 as never, 1000), 'value'],
      [() => bad.idempotencyComplete('n', 'k', 't', 'v', -1), 'ttlMs'],
      [() => bad.idempotencyRelease('n', 'k', 7 as never), 'token'],
      [() => bad.versionUpsert('g', 'k', '01', 'v'), 'version'],
      [() => bad.versionUpsert('g', 'k', '-0', 'v'), 'version'],
      [() => bad.versionUpsert('g', 'k', '1e3', 'v'), 'version'],
      [() => bad.versionUpsert('g', 'k', 5 as never, 'v'), 'version'],
      [() => bad.versionUpsert('g', 'k', '9'.repeat(131_073), 'v'), 'version'],
      [() => bad.versionUpsert('g\u0000', 'k', '1', 'v'), 'gate'],
      [() => bad.versionUpsert('g', 'k', '1', 'v\ud800'), 'value'],
      [() => bad.versionGet('g', 'k\u0000'), 'key'],
      [() => bad.checkpointSave('n', 1.5, '{}'), 'revision'],
      [() => bad.checkpointSave('n', 1, 5 as never), 'data'],
      [() => bad.checkpointLoad('n\u0000'), 'name'],
      [() => bad.timestampAdvance('n', Number.POSITIVE_INFINITY), 'ms'],
      [() => bad.leaseRenew('n', 'r\u0000', 1, undefined), 'run'],
      [() => bad.leaseRenew('n', 'r', 1, 2 ** 53), 'takeover'],
    ];
    for (const [call, path] of cases) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect({ path: (err as InvalidArgumentError).path }).toEqual({ path });
    }
    expect(calls).toEqual([]);
  });

  it('a schema of 63 characters: every statement of one connection keeps its own prepared name', async () => {
    // PostgreSQL keeps 63 bytes of a statement name: names that began with the schema would meet.
    const long = `${runSchema('idem_long')}_${'x'.repeat(63)}`.slice(0, 63);
    schemas.push(long);
    const one = testPool(1);
    try {
      const s = createPostgresStore({ pool: one, schema: long });
      expect(await s.versionUpsert('g', 'k', '1', 'v')).toEqual({ outcome: 'applied', version: '1' });
      expect(await s.versionGet('g', 'k')).toEqual({ version: '1', value: 'v' });
      expect(await s.checkpointSave('c', 1, 'd')).toBe('saved');
      expect(await s.checkpointLoad('c')).toEqual({ revision: 1, data: 'd' });
      expect(await s.timestampAdvance('t', 5)).toBe(5);
      expect(await s.leaseRenew('t', 'r', 6, 5)).toEqual({ held: true, ms: 6 });
      const b = await s.idempotencyBegin({ name: 'n', key: 'k', payloadHash: '', token: 't', leaseMs: 1000 });
      expect(b).toMatchObject({ outcome: 'acquired' });
      expect(await s.idempotencyRenew('n', 'k', 't', 1000)).toBe(true);
      expect(await s.idempotencyComplete('n', 'k', 't', 'v', 1000)).toBe(true);
      expect(await s.idempotencyRelease('n', 'k', 't')).toBe(false);
      expect(await s.cleanup()).toMatchObject({ idempotency: 0 });
    } finally {
      await one.end();
    }
  });
});
