// The behaviour of `idempotencyGet` (the read-only state of one idempotency record), written once
// and bound per store: memory (src/idempotency/pre-check.test.ts), Redis and PostgreSQL
// (test/integration/redis-idempotency-get.test.ts, postgres-idempotency-get.test.ts). Expiry is waited out for real on the
// store's own clock: leases and ttls of 60 ms, waits of 150 ms (a slow machine only waits longer).
import { expect, it } from 'vitest';
import { isOnceflowError } from '../../src/core/errors.js';
import { createIdempotency } from '../../src/idempotency/idempotency.js';
import type { Store } from '../../src/store/store.js';
import { SeenFilter } from '../../src/windows/seen-filter.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type GetStore = Store & Required<Pick<Store, 'idempotencyBegin' | 'idempotencyComplete' | 'idempotencyGet'>>;

/** Registers the cases; `store()` gives the store under test, `name` a name unique to the run. */
export function idempotencyGetCases(store: () => Store, name: (n: string) => string): void {
  const s = () => store() as GetStore;
  const begin = (n: string, key: string, token: string, leaseMs = 60_000) =>
    s().idempotencyBegin({ name: n, key, payloadHash: 'h', token, leaseMs });

  it('idempotencyGet follows the record: absent, in-progress, completed; released is absent again', async () => {
    const n = name('get-follows');
    expect(await s().idempotencyGet(n, 'k')).toBe('absent');
    expect((await begin(n, 'k', 't1')).outcome).toBe('acquired');
    expect(await s().idempotencyGet(n, 'k')).toBe('in-progress');
    expect(await s().idempotencyComplete(n, 'k', 't1', '"v"', 60_000)).toBe(true);
    expect(await s().idempotencyGet(n, 'k')).toBe('completed');
    expect(await s().idempotencyGet(n, 'other')).toBe('absent');
    expect(await s().idempotencyGet(name('another-name'), 'k')).toBe('absent');
    expect((await begin(n, 'r', 't2')).outcome).toBe('acquired');
    expect(await s().idempotencyRelease?.(n, 'r', 't2')).toBe(true);
    expect(await s().idempotencyGet(n, 'r')).toBe('absent');
  });

  it('idempotencyGet changes nothing: the holder still renews and completes, a begin still replays', async () => {
    const n = name('get-reads-only');
    await begin(n, 'k', 't1');
    for (let i = 0; i < 3; i++) expect(await s().idempotencyGet(n, 'k')).toBe('in-progress');
    expect(await s().idempotencyRenew?.(n, 'k', 't1', 60_000)).toBe(true);
    expect(await s().idempotencyComplete(n, 'k', 't1', '"v"', 60_000)).toBe(true);
    expect(await s().idempotencyGet(n, 'k')).toBe('completed');
    expect(await begin(n, 'k', 't2')).toMatchObject({ outcome: 'completed', value: '"v"' });
  });

  it('a dead record reads absent on the store clock: a lease run out, a value past its ttl', async () => {
    const n = name('get-dead');
    await begin(n, 'lease', 't1', 60);
    expect((await begin(n, 'ttl', 't2')).outcome).toBe('acquired');
    expect(await s().idempotencyComplete(n, 'ttl', 't2', '"v"', 60)).toBe(true);
    await sleep(150);
    expect(await s().idempotencyGet(n, 'lease')).toBe('absent');
    expect(await s().idempotencyGet(n, 'ttl')).toBe('absent');
  });

  it('idempotency.seen with a pre-check: a false positive reads the store and answers false', async () => {
    const filter = new SeenFilter({ expected: 10 });
    filter.add('k-fp'); // as if another key had set its bits
    const idem = createIdempotency({ store: s(), name: name('seen'), preCheck: filter });
    expect(await idem.seen('k-fp')).toBe(false);
    expect(await idem.seen('never')).toBe(false);
    await idem.run({ key: 'k' }, () => 1);
    expect(await idem.seen('k')).toBe(true);
  });

  it('bad arguments are refused before the store is asked', async () => {
    for (const [n, key] of [
      [7, 'k'],
      [name('bad'), null],
    ] as const) {
      let err: unknown;
      try {
        await s().idempotencyGet(n as never, key as never);
      } catch (e) {
        err = e;
      }
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    }
  });
}
