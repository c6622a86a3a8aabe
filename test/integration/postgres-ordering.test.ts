// The public features built on the ordering and idempotency operations, on the Postgres store:
// a version gate, a reorderer that checkpoints and restarts, a snowflake generator holding a
// lease across a restart, and idempotent calls; what a user does with them, end to end.
import { afterAll, describe, expect, it } from 'vitest';
import { createIdempotency, createReorderer, Snowflake, VersionGate } from '../../src/index.js';
import { createPostgresStore } from '../../src/postgres/index.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';

describe('ordering and idempotency features on the Postgres store', () => {
  const pool = testPool(4);
  const schema = runSchema('ord');
  const store = createPostgresStore({ pool, schema });
  afterAll(async () => {
    await dropSchema(pool, schema);
    await pool.end();
  });

  it('a version gate converges on the newest row, bigint versions beyond 2^64 included', async () => {
    const gate = new VersionGate({ store, name: 'users' });
    const big = 2n ** 64n + 1n;
    expect(await gate.upsert('u1', big, { name: 'new' })).toEqual({ outcome: 'applied', version: big });
    expect(await gate.upsert('u1', big - 2n, { name: 'old' })).toEqual({ outcome: 'stale', version: big });
    expect(await gate.upsert('u1', big, { name: 'again' })).toEqual({ outcome: 'duplicate', version: big });
    expect(await gate.get('u1')).toEqual({ version: big, value: { name: 'new' } });
    expect(await gate.get('nobody')).toBeUndefined();
  });

  it('versions up to the 131072 digits numeric holds compare exactly; longer ones are refused before any SQL', async () => {
    const widest = '9'.repeat(131_072);
    const below = `8${'9'.repeat(131_071)}`;
    expect(await store.versionUpsert('wide', 'k', below, 'a')).toEqual({
      outcome: 'applied',
      version: below,
    });
    expect(await store.versionUpsert('wide', 'k', widest, 'b')).toEqual({
      outcome: 'applied',
      version: widest,
    });
    expect(await store.versionUpsert('wide', 'k', below, 'c')).toEqual({ outcome: 'stale', version: widest });
    expect(await store.versionUpsert('wide', 'k', `-${widest}`, 'd')).toEqual({
      outcome: 'stale',
      version: widest,
    });
    await expect(store.versionUpsert('wide', 'k', `1${widest}`, 'e')).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
      path: 'version',
    });
    expect(await store.versionGet('wide', 'k')).toEqual({ version: widest, value: 'b' });
  });

  it('a reorderer restarted from its checkpoint continues where it stopped; the old run is refused', async () => {
    const out: number[] = [];
    const checkpoint = { store, name: 'stream-1', every: 1 };
    const first = await createReorderer<string>({
      next: 1,
      capacity: 10,
      gapTimeout: '10s',
      onRelease: (r) => {
        out.push(r.seq);
      },
      checkpoint,
    });
    first.push(1, 'a');
    first.push(3, 'c'); // held behind the hole at 2
    await first.checkpoint();
    const second = await createReorderer<string>({
      next: 1,
      capacity: 10,
      gapTimeout: '10s',
      onRelease: (r) => {
        out.push(r.seq);
      },
      checkpoint,
    });
    expect(second.buffer.next).toBe(2);
    second.push(2, 'b');
    await second.close();
    expect(out).toEqual([1, 2, 3]);
    // The first run saves again: another run saved since it loaded, so it must stop.
    await expect(first.close()).rejects.toMatchObject({ code: 'ERR_STORE', operation: 'checkpointSave' });
  });

  it('a snowflake generator persists its lease; a restart issues only later ids', async () => {
    const a = await Snowflake.start({ worker: 1, store, name: 'ids', lease: '200ms' });
    const first = a.next();
    a.close();
    const b = await Snowflake.start({ worker: 1, store, name: 'ids', lease: '200ms' });
    const second = b.next();
    b.close();
    expect(second > first).toBe(true);
    // The lease the first run persisted is ahead of its last id's time.
    expect(await store.timestampAdvance('ids', -1)).toBeGreaterThanOrEqual(Number(a.decode(first).timestamp));
  });

  it('idempotent calls: one execution among racing callers, replays, mismatch, and a failure frees the key', async () => {
    const idem = createIdempotency({ store, name: 'charges', lease: '5s', ttl: '1h' });
    let runs = 0;
    // The charge runs until the 4 other callers have their answer (a fixed sleep would let a
    // racer on a loaded machine arrive after it and be replayed); 10 s bounds a broken build.
    let others = 0;
    let release = () => {};
    const raced = new Promise<void>((resolve) => {
      release = resolve;
    });
    const charge = async () => {
      runs++;
      await Promise.race([raced, new Promise((r) => setTimeout(r, 10_000))]);
      return { id: `ch_${runs}`, amount: 500n };
    };
    const racing = await Promise.all(
      Array.from({ length: 5 }, () =>
        idem.run({ key: 'order-1', payload: { amount: 500 } }, charge).then((r) => {
          if (r.outcome !== 'executed' && ++others === 4) release();
          return r;
        }),
      ),
    );
    expect(racing.filter((r) => r.outcome === 'executed')).toHaveLength(1);
    expect(racing.filter((r) => r.outcome === 'in-progress')).toHaveLength(4);
    expect(await idem.run({ key: 'order-1', payload: { amount: 500 } }, charge)).toEqual({
      outcome: 'replayed',
      value: { id: 'ch_1', amount: 500n },
    });
    expect((await idem.run({ key: 'order-1', payload: { amount: 900 } }, charge)).outcome).toBe('mismatch');
    expect(runs).toBe(1);
    await expect(
      idem.run({ key: 'order-2' }, () => {
        throw new Error('card declined');
      }),
    ).rejects.toThrow('card declined');
    expect(await idem.run({ key: 'order-2' }, () => 'ok')).toEqual({ outcome: 'executed', value: 'ok' });
  });
});
