// A value `fn` returns that the serializer cannot keep (a cycle) is a typed error naming where the
// cycle closes, and leaves nothing held: the key is released at once, so the next call runs
// (without waiting out the lease). The serializer is shared by every store: bound on each.
import { describe, expect, it } from 'vitest';
import { isOnceflowError } from '../../../src/core/errors.js';
import { createIdempotency, idempotent } from '../../../src/idempotency/index.js';
import { rejected } from '../thrown.js';
import type { StoreTarget } from './target.js';

function cyclic(): { id: string; self?: unknown } {
  const value: { id: string; self?: unknown } = { id: 'ch_1' };
  value.self = value;
  return value;
}

export function cyclicResultSuite(target: StoreTarget): void {
  describe(`a cyclic result on ${target.label}`, () => {
    it('run(): ERR_INVALID_ARGUMENT naming the cycle; the key is released, the next call runs', async () => {
      // A lease far longer than the test: a key left held would answer in-progress below.
      const idem = createIdempotency({ store: target.store(), lease: '1h' });
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
        { store: target.store(), key: (order) => order.id, lease: '1h', hashPayload: false },
      );
      const err = await rejected(charge({ id: 'o1', deep: true }));
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect((err as Error).message).toContain('`value.items[1].back[0]`');
      expect(await charge({ id: 'o1', deep: false })).toEqual({ ok: true });
      expect(runs).toBe(2);
    });
  });
}
