import { describe, expect, it } from 'vitest';
import { idempotencyGetCases } from '../../test/support/idempotency-get-cases.js';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import type { OnceflowEvent } from '../core/observer.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { SeenFilter } from '../windows/seen-filter.js';
import { createIdempotency } from './idempotency.js';

const rejection = async (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => 'resolved',
    (e) => e,
  );

// A memory store that counts its record reads (the read a pre-check may skip).
function counted(base: Store = memoryStore()) {
  const reads = { n: 0 };
  const store = wrapStore(base, {
    idempotencyGet: (name, key) => {
      reads.n++;
      return (base.idempotencyGet as NonNullable<Store['idempotencyGet']>)(name, key);
    },
  });
  return { store, reads };
}

describe('idempotencyGet on the memory store', () => {
  const store = memoryStore();
  idempotencyGetCases(
    () => store,
    (n) => n,
  );
});

describe('idempotency.seen', () => {
  it('without a pre-check: reads the record every time; true only for a live completed one', async () => {
    const clock = new FakeClock(0);
    const { store, reads } = counted(memoryStore({ clock }));
    const idem = createIdempotency({ store, ttl: '1s' });
    expect(await idem.seen('k')).toBe(false);
    let release!: () => void;
    const running = idem.run({ key: 'k' }, () => new Promise<number>((r) => (release = () => r(1))));
    await Promise.resolve();
    expect(await idem.seen('k')).toBe(false); // in progress: advisory false, run decides
    release();
    await running;
    expect(await idem.seen('k')).toBe(true);
    clock.advance(1_000);
    expect(await idem.seen('k')).toBe(false); // past its ttl
    expect(reads.n).toBe(4);
  });

  it('with a pre-check: never run here answers false without a read; run adds the key first', async () => {
    const { store, reads } = counted();
    const seen: OnceflowEvent[] = [];
    const idem = createIdempotency({
      store,
      name: 'payouts',
      preCheck: new SeenFilter({ expected: 1_000 }),
      observer: (e) => seen.push(e),
    });
    expect(await idem.seen('k')).toBe(false);
    expect(reads.n).toBe(0);
    await idem.run({ key: 'k' }, () => 'v');
    expect(await idem.seen('k')).toBe(true);
    expect(reads.n).toBe(1);
    expect(seen.filter((e) => e.type === 'pre-check')).toEqual([
      { part: 'idempotency', type: 'pre-check', scope: 'payouts', outcome: 'skipped' },
      { part: 'idempotency', type: 'pre-check', scope: 'payouts', outcome: 'read-seen' },
    ]);
  });

  it('a key whose fn threw reads as not seen (released), and runs again', async () => {
    const idem = createIdempotency({ preCheck: new SeenFilter({ expected: 10 }) });
    await rejection(
      idem.run({ key: 'k' }, () => {
        throw new Error('boom');
      }),
    );
    expect(await idem.seen('k')).toBe(false);
    expect((await idem.run({ key: 'k' }, () => 2)).outcome).toBe('executed');
  });

  it('refuses a bad key, a bad preCheck, and a store without idempotencyGet', async () => {
    const { store, reads } = counted();
    const idem = createIdempotency({ store });
    for (const key of ['', 7, 'x'.repeat(513)])
      expect(isOnceflowError(await rejection(idem.seen(key as never)), 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect(reads.n).toBe(0);
    let err: unknown;
    try {
      createIdempotency({ preCheck: { expected: 1 } as never });
    } catch (e) {
      err = e;
    }
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as { option: string }).option).toBe('preCheck');
    const without = createIdempotency({ store: wrapStore(memoryStore(), { idempotencyGet: undefined }) });
    expect(isOnceflowError(await rejection(without.seen('k')), 'ERR_INVALID_OPTION')).toBe(true);
    // run does not need it.
    expect((await without.run({ key: 'k' }, () => 1)).outcome).toBe('executed');
  });
});
