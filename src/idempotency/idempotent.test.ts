import { describe, expect, it } from 'vitest';
import { rejected } from '../../test/support/thrown.js';
import { isOnceflowError } from '../core/errors.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { idempotent } from './idempotent.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('idempotent()', () => {
  it("resolves fn's value, the recorded one when replayed; fn runs once per key", async () => {
    let runs = 0;
    const f = idempotent(async (a: { id: string; n: number }) => ({ n: a.n, run: ++runs }), {
      key: (a) => a.id,
    });
    expect(await f({ id: 'x', n: 1 })).toEqual({ n: 1, run: 1 });
    expect(await f({ id: 'x', n: 1 })).toEqual({ n: 1, run: 1 });
    expect(await f({ id: 'y', n: 1 })).toEqual({ n: 1, run: 2 });
  });

  it('rejects ERR_IN_PROGRESS (with retryAfterMs) and ERR_PAYLOAD_MISMATCH; the argument is the payload by default', async () => {
    const f = idempotent(
      async (a: { id: string; n: number }) => {
        await sleep(30);
        return a.n;
      },
      {
        key: (a) => a.id,
      },
    );
    const [first, second] = await Promise.allSettled([f({ id: 'x', n: 1 }), f({ id: 'x', n: 1 })]);
    expect(first).toEqual({ status: 'fulfilled', value: 1 });
    const busy = second.status === 'rejected' ? second.reason : undefined;
    expect(isOnceflowError(busy, 'ERR_IN_PROGRESS') && busy).toMatchObject({ key: 'x' });
    expect((busy as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    const mismatch = await rejected(f({ id: 'x', n: 2 }));
    expect(isOnceflowError(mismatch, 'ERR_PAYLOAD_MISMATCH')).toBe(true);
  });

  it('payload chooses what is hashed; wait makes concurrent callers share the result', async () => {
    let runs = 0;
    const f = idempotent(
      async (a: { id: string; at: number }) => {
        runs++;
        await sleep(30);
        return a.id;
      },
      { key: (a) => a.id, payload: (a) => a.id, wait: true, store: memoryStore() },
    );
    expect(await Promise.all([f({ id: 'x', at: 1 }), f({ id: 'x', at: 2 }), f({ id: 'x', at: 3 })])).toEqual([
      'x',
      'x',
      'x',
    ]);
    expect(runs).toBe(1);
  });

  it("fn's error reaches the caller unchanged and the next call runs again", async () => {
    let runs = 0;
    const boom = new RangeError('boom');
    const f = idempotent(
      async (_: string) => {
        if (++runs === 1) throw boom;
        return 'ok';
      },
      { key: (s) => s },
    );
    expect(await rejected(f('k'))).toBe(boom);
    expect(await f('k')).toBe('ok');
  });

  it('every option is validated when wrapping', () => {
    const bad: [unknown, unknown, string][] = [
      ['not a function', { key: () => 'k' }, 'fn'],
      [() => 1, null, 'options'],
      [() => 1, {}, 'key'],
      [() => 1, { key: () => 'k', payload: 'p' }, 'payload'],
      [() => 1, { key: () => 'k', wait: -1 }, 'wait'],
      [() => 1, { key: () => 'k', lease: 0 }, 'lease'],
    ];
    for (const [fn, options, option] of bad) {
      let caught: unknown;
      try {
        idempotent(fn as never, options as never);
      } catch (err) {
        caught = err;
      }
      expect(caught, option).toMatchObject({ option });
    }
  });
});
