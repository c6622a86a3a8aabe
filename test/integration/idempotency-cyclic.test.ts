// A value `fn` returns that the serializer cannot keep (a cycle) is a typed error naming where the
// cycle closes, and leaves nothing held: the key is released at once, so the next call runs
// (without waiting out the lease). The serializer is shared by every store: run on each.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isOnceflowError } from '../../src/core/errors.js';
import { createIdempotency, idempotent } from '../../src/idempotency/index.js';
import { createPostgresStore } from '../../src/postgres/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { rejected } from '../support/thrown.js';
import { dropSchema, runSchema, testPool } from './pg-env.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const redis = new Redis(REDIS_URL);
const prefix = runPrefix('idem-cyclic');
const pool = testPool(2);
const schema = runSchema('idem_cyclic');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
  await dropSchema(pool, schema);
  await pool.end();
});

const stores: [string, () => Store][] = [
  ['memory', () => memoryStore()],
  ['redis', () => createRedisStore({ client: redis, prefix })],
  ['postgres', () => createPostgresStore({ pool, schema })],
];

function cyclic(): { id: string; self?: unknown } {
  const value: { id: string; self?: unknown } = { id: 'ch_1' };
  value.self = value;
  return value;
}

describe.each(stores)('a cyclic result on the %s store', (_name, makeStore) => {
  it('run(): ERR_INVALID_ARGUMENT naming the cycle; the key is released, the next call runs', async () => {
    // A lease far longer than the test: a key left held would answer in-progress below.
    const idem = createIdempotency({ store: makeStore(), lease: '1h' });
    let runs = 0;
    const err = await rejected(
      idem.run({ key: 'k1', payload: 1 }, () => {
        runs++;
        return cyclic();
      }),
    );
    expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toContain('`value.self`');
    expect((err as Error).message).toContain('cycle');
    const next = await idem.run({ key: 'k1', payload: 1 }, () => {
      runs++;
      return { id: 'ch_2' };
    });
    expect(next).toEqual({ outcome: 'executed', value: { id: 'ch_2' } });
    expect(runs).toBe(2);
  });

  it('idempotent(): the same typed error, and the key is free again', async () => {
    let runs = 0;
    const charge = idempotent(
      (order: { id: string; deep: boolean }) => {
        runs++;
        if (!order.deep) return { ok: true };
        const list: unknown[] = [1];
        list.push({ back: [list] });
        return { items: list };
      },
      { store: makeStore(), key: (order) => order.id, lease: '1h', hashPayload: false },
    );
    const err = await rejected(charge({ id: 'o1', deep: true }));
    expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toContain('`value.items[1].back[0]`');
    expect(await charge({ id: 'o1', deep: false })).toEqual({ ok: true });
    expect(runs).toBe(2);
  });
});
