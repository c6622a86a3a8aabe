import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../core/clock.js';
import type { OnceflowEvent } from '../core/observer.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { createIdempotency } from './idempotency.js';
import { idempotent } from './idempotent.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const run = (scope: string, outcome: string, key = 'k', takeover = false) => ({
  part: 'idempotency',
  type: 'run',
  scope,
  outcome,
  takeover,
  key,
});

describe('idempotency observer', () => {
  afterEach(() => vi.restoreAllMocks());

  it('sees executed, replayed, in-progress, mismatch and failed, with the scope name', async () => {
    const seen: OnceflowEvent[] = [];
    const idem = createIdempotency({ name: 'charges', observer: (e) => seen.push(e) });
    let finish!: (v: string) => void;
    const holder = idem.run({ key: 'k', payload: 1 }, () => new Promise<string>((r) => (finish = r)));
    await sleep(1);
    expect((await idem.run({ key: 'k', payload: 1 }, () => 'x')).outcome).toBe('in-progress');
    finish('v');
    await holder;
    await idem.run({ key: 'k', payload: 1 }, () => 'x');
    await idem.run({ key: 'k', payload: 2 }, () => 'x');
    await expect(
      idem.run({ key: 'f' }, () => {
        throw new RangeError('fn failed');
      }),
    ).rejects.toThrow('fn failed');
    expect(seen).toEqual([
      run('charges', 'in-progress'),
      run('charges', 'executed'),
      run('charges', 'replayed'),
      run('charges', 'mismatch'),
      { ...run('charges', 'failed', 'f'), error: 'RangeError' },
    ]);
  });

  it('sees a takeover on the new holder and a lost lease on the old one', async () => {
    const seen: OnceflowEvent[] = [];
    const clock = new FakeClock(0);
    const base = memoryStore({ clock });
    // The first holder's renewals never reach the store: it hangs, and its lease runs out.
    let dead = '';
    const store = wrapStore(base, {
      idempotencyRenew: (name, key, token, ms) =>
        token === dead ? new Promise<boolean>(() => {}) : base.idempotencyRenew!(name, key, token, ms),
      idempotencyBegin: async (cmd) => {
        const reply = await base.idempotencyBegin!(cmd);
        if (dead === '' && reply.outcome === 'acquired') dead = cmd.token;
        return reply;
      },
    });
    const idem = createIdempotency({ store, lease: '30s', observer: (e) => seen.push(e) });
    let finish!: (v: string) => void;
    const first = idem.run({ key: 'k' }, () => new Promise<string>((r) => (finish = r)));
    await sleep(5);
    clock.advance(30_000);
    expect(await idem.run({ key: 'k' }, () => 'second')).toEqual({ outcome: 'executed', value: 'second' });
    finish('first');
    await expect(first).rejects.toMatchObject({ code: 'ERR_LEASE_LOST' });
    expect(seen).toEqual([
      run('default', 'executed', 'k', true),
      { part: 'idempotency', type: 'lease-lost', scope: 'default', key: 'k' },
      { ...run('default', 'failed'), error: 'ERR_LEASE_LOST' },
    ]);
  });

  it('reports nothing for input refused before the store', async () => {
    const seen: OnceflowEvent[] = [];
    const idem = createIdempotency({ observer: (e) => seen.push(e) });
    await expect(idem.run({ key: '' }, () => 1)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    expect(seen).toEqual([]);
  });

  it('idempotent() takes an observer too', async () => {
    const seen: OnceflowEvent[] = [];
    const send = idempotent((id: string) => `sent ${id}`, { key: (id) => id, observer: (e) => seen.push(e) });
    await send('a');
    await send('a');
    expect(seen.map((e) => (e.type === 'run' ? e.outcome : e.type))).toEqual(['executed', 'replayed']);
  });

  it('keeps running when the observer throws, and reports it once', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    let runs = 0;
    const idem = createIdempotency({
      observer: () => {
        throw new Error('observer bug');
      },
    });
    expect(await idem.run({ key: 'k' }, () => ++runs)).toEqual({ outcome: 'executed', value: 1 });
    expect(await idem.run({ key: 'k' }, () => ++runs)).toEqual({ outcome: 'replayed', value: 1 });
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('refuses an observer that is not a function', () => {
    expect(() => createIdempotency({ observer: {} as never })).toThrow(/`observer`/);
  });
});
