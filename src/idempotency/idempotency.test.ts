import { describe, expect, it } from 'vitest';
import { rejected } from '../../test/support/thrown.js';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import { memoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { createIdempotency } from './idempotency.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A promise and its resolver: an fn that runs until the test lets it finish. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    open = r;
  });
  return { promise, open };
}

function code(err: unknown): string {
  if (!isOnceflowError(err)) throw err;
  return err.code;
}

describe('createIdempotency: run once per key', () => {
  it('concurrent calls with one key: exactly one runs fn, the others are in-progress', async () => {
    const idem = createIdempotency();
    let runs = 0;
    const done = gate<string>();
    const fn = () => {
      runs++;
      return done.promise;
    };
    const calls = Array.from({ length: 10 }, () => idem.run({ key: 'k' }, fn));
    const early = await Promise.all(calls.slice(1));
    done.open('v');
    expect(await calls[0]).toEqual({ outcome: 'executed', value: 'v' });
    expect(runs).toBe(1);
    for (const r of early) {
      expect(r.outcome).toBe('in-progress');
      if (r.outcome === 'in-progress') expect(r.retryAfterMs).toBeGreaterThan(0);
    }
  });

  it('with wait, the others wait and get the value replayed', async () => {
    const idem = createIdempotency();
    let runs = 0;
    const fn = async () => {
      runs++;
      await sleep(30);
      return { n: runs };
    };
    const results = await Promise.all(
      Array.from({ length: 6 }, () => idem.run({ key: 'k' }, fn, { wait: true })),
    );
    expect(runs).toBe(1);
    expect(results.filter((r) => r.outcome === 'executed')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'replayed')).toHaveLength(5);
    for (const r of results)
      if (r.outcome === 'replayed' || r.outcome === 'executed') expect(r.value).toEqual({ n: 1 });
  });

  it('a wait budget shorter than the run ends in-progress', async () => {
    const idem = createIdempotency();
    const done = gate();
    const first = idem.run({ key: 'k' }, () => done.promise);
    const t0 = performance.now();
    const r = await idem.run({ key: 'k' }, () => 'never', { wait: 40 });
    expect(r.outcome).toBe('in-progress');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(38);
    done.open();
    await first;
  });

  it('replayed until the ttl (store clock), then the key runs again', async () => {
    const clock = new FakeClock(1_000);
    const idem = createIdempotency({ store: memoryStore({ clock }), ttl: '10s' });
    let runs = 0;
    const fn = () => ++runs;
    expect(await idem.run({ key: 'k' }, fn)).toEqual({ outcome: 'executed', value: 1 });
    clock.advance(9_999);
    expect(await idem.run({ key: 'k' }, fn)).toEqual({ outcome: 'replayed', value: 1 });
    clock.advance(1);
    expect(await idem.run({ key: 'k' }, fn)).toEqual({ outcome: 'executed', value: 2 });
    expect(await idem.run({ key: 'k' }, fn)).toEqual({ outcome: 'replayed', value: 2 });
  });

  it('values round-trip as JSON with bigint, Date and undefined', async () => {
    const idem = createIdempotency();
    const value = {
      amount: 12345678901234567890n,
      at: new Date(1_700_000_000_000),
      list: [1n, 'x'],
      $t: 'user key',
    };
    await idem.run({ key: 'k' }, () => value);
    expect(await idem.run({ key: 'k' }, () => null)).toEqual({ outcome: 'replayed', value });
    await idem.run({ key: 'u' }, () => undefined);
    expect(await idem.run({ key: 'u' }, () => 'other')).toEqual({ outcome: 'replayed', value: undefined });
  });

  it('a serializer replaces JSON', async () => {
    const seen: string[] = [];
    const idem = createIdempotency({
      serializer: {
        serialize: (v) => {
          seen.push('serialize');
          return `<${String(v)}>`;
        },
        deserialize: (t) => {
          seen.push('deserialize');
          return t.slice(1, -1).toUpperCase();
        },
      },
    });
    expect(await idem.run({ key: 'k' }, () => 'abc')).toEqual({ outcome: 'executed', value: 'abc' });
    expect(await idem.run({ key: 'k' }, () => 'zzz')).toEqual({ outcome: 'replayed', value: 'ABC' });
    expect(seen).toEqual(['serialize', 'deserialize']);
  });

  it('a value over maxResultBytes is ERR_RESULT_TOO_LARGE and the record is released', async () => {
    const idem = createIdempotency({ maxResultBytes: 10 });
    let runs = 0;
    const big = () => {
      runs++;
      return 'é'.repeat(5); // 10 bytes of UTF-8, 12 as JSON
    };
    const err = await rejected(idem.run({ key: 'k' }, big));
    expect(code(err)).toBe('ERR_RESULT_TOO_LARGE');
    expect(err).toMatchObject({ bytes: 12, maxBytes: 10, key: 'k' });
    // Released: the next call runs again (and a fitting value is kept).
    expect(
      await idem.run({ key: 'k' }, () => {
        runs++;
        return 'é'.repeat(4);
      }),
    ).toEqual({
      outcome: 'executed',
      value: 'éééé',
    });
    expect(runs).toBe(2);
  });

  it('same key, another payload: mismatch, nothing runs; key order does not matter', async () => {
    const idem = createIdempotency();
    let runs = 0;
    const fn = () => ++runs;
    await idem.run({ key: 'k', payload: { a: 1, b: 2 } }, fn);
    expect(await idem.run({ key: 'k', payload: { b: 2, a: 1 } }, fn)).toEqual({
      outcome: 'replayed',
      value: 1,
    });
    expect(await idem.run({ key: 'k', payload: { a: 1, b: 3 } }, fn)).toEqual({ outcome: 'mismatch' });
    expect(await idem.run({ key: 'k' }, fn)).toEqual({ outcome: 'mismatch' });
    // While in progress too.
    const done = gate();
    const held = idem.run({ key: 'h', payload: 1 }, () => done.promise);
    expect(await idem.run({ key: 'h', payload: 2 }, fn)).toEqual({ outcome: 'mismatch' });
    done.open();
    await held;
    expect(runs).toBe(1);
  });

  it('hashPayload: false ignores payloads', async () => {
    const idem = createIdempotency({ hashPayload: false });
    await idem.run({ key: 'k', payload: 1 }, () => 'a');
    expect(await idem.run({ key: 'k', payload: 2 }, () => 'b')).toEqual({ outcome: 'replayed', value: 'a' });
  });

  it('fn throws: the record is released, the error reaches the caller unchanged, the next call runs', async () => {
    const idem = createIdempotency();
    const boom = new TypeError('boom');
    expect(await rejected(idem.run({ key: 'k' }, () => Promise.reject(boom)))).toBe(boom);
    const sync = { not: 'an error' };
    expect(
      await rejected(
        idem.run({ key: 'k' }, () => {
          throw sync;
        }),
      ),
    ).toBe(sync);
    expect(await idem.run({ key: 'k' }, () => 'ok')).toEqual({ outcome: 'executed', value: 'ok' });
  });

  it('names keep records apart; the default name is "default"', async () => {
    const store = memoryStore();
    const a = createIdempotency({ store, name: 'a' });
    const b = createIdempotency({ store, name: 'b' });
    await a.run({ key: 'k' }, () => 'from a');
    expect(await b.run({ key: 'k' }, () => 'from b')).toEqual({ outcome: 'executed', value: 'from b' });
    expect(createIdempotency({ store }).name).toBe('default');
  });
});

describe('leases: renewal, a holder that dies, fencing', () => {
  it('the holder renews every lease/3 while fn runs, so a long fn keeps its key', async () => {
    const base = memoryStore();
    const renewals: number[] = [];
    const t0 = performance.now();
    const store = wrapStore(base, {
      idempotencyRenew: (...args) => {
        renewals.push(performance.now() - t0);
        return base.idempotencyRenew!(...args);
      },
    });
    const idem = createIdempotency({ store, lease: 90 });
    let runs = 0;
    const slow = async () => {
      runs++;
      await sleep(250); // ~2.8 leases
      return 'done';
    };
    const holder = idem.run({ key: 'k' }, slow);
    await sleep(150); // past the first lease: only renewals keep it
    expect((await idem.run({ key: 'k' }, slow)).outcome).toBe('in-progress');
    expect(await holder).toEqual({ outcome: 'executed', value: 'done' });
    expect(runs).toBe(1);
    // About every 30 ms: 250 ms of fn gives ~8 renewals; never the first before a third of the lease.
    expect(renewals.length).toBeGreaterThanOrEqual(4);
    expect(renewals[0]).toBeGreaterThanOrEqual(28);
    await sleep(100);
    expect(renewals.length).toBeLessThanOrEqual(9); // and none after fn returned
  });

  it('a holder that dies (stops renewing): after the lease another caller takes over; the old one gets ERR_LEASE_LOST', async () => {
    const clock = new FakeClock(0);
    const base = memoryStore({ clock });
    // The first holder's renewals never reach the store (it hangs, then dies).
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
    const idem = createIdempotency({ store, lease: '30s' });
    let runs = 0;
    const finish = gate<string>();
    const first = idem.run({ key: 'k' }, () => {
      runs++;
      return finish.promise;
    });
    await sleep(5);
    clock.advance(29_999);
    expect(await idem.run({ key: 'k' }, () => 'x')).toEqual({ outcome: 'in-progress', retryAfterMs: 1 });
    clock.advance(1);
    const second = await idem.run({ key: 'k' }, () => {
      runs++;
      return 'second';
    });
    expect(second).toEqual({ outcome: 'executed', value: 'second' });
    finish.open('first');
    expect(code(await rejected(first))).toBe('ERR_LEASE_LOST');
    expect(runs).toBe(2);
    // The record is the second holder's: the first one overwrote nothing.
    expect(await idem.run({ key: 'k' }, () => 'third')).toEqual({ outcome: 'replayed', value: 'second' });
  });

  it('a renewal answered false marks the run lost: complete is not attempted, the caller gets ERR_LEASE_LOST', async () => {
    const base = memoryStore();
    let completes = 0;
    const store = wrapStore(base, {
      idempotencyRenew: async () => false,
      idempotencyComplete: (...args) => {
        completes++;
        return base.idempotencyComplete!(...args);
      },
    });
    const idem = createIdempotency({ store, lease: 30 });
    const err = await rejected(idem.run({ key: 'k' }, () => sleep(40)));
    expect(code(err)).toBe('ERR_LEASE_LOST');
    expect(completes).toBe(0);
  });

  it('failed renewals (store errors) are retried sooner and the lease survives', async () => {
    const base = memoryStore();
    let calls = 0;
    const store = wrapStore(base, {
      idempotencyRenew: (...args) =>
        ++calls <= 2 ? Promise.reject(new Error('lost reply')) : base.idempotencyRenew!(...args),
    });
    const idem = createIdempotency({ store, lease: 150 });
    // The holder runs until the check is done: on a loaded machine a timed fn could finish first.
    const finish = gate<string>();
    const holder = idem.run({ key: 'k' }, () => finish.promise);
    await sleep(170); // past the lease: the third renewal (at ~100 ms) kept it
    expect((await idem.run({ key: 'k' }, () => 'x')).outcome).toBe('in-progress');
    finish.open('ok');
    expect(await holder).toEqual({ outcome: 'executed', value: 'ok' });
  });

  it('a waiter takes over once the holder lease runs out', async () => {
    const base = memoryStore();
    const store = wrapStore(base, { idempotencyRenew: () => new Promise<boolean>(() => {}) });
    const idem = createIdempotency({ store, lease: 40 });
    const stuck = idem.run({ key: 'k' }, () => sleep(120).then(() => 'late'));
    const waiter = await idem.run({ key: 'k' }, () => 'took over', { wait: 200 });
    expect(waiter).toEqual({ outcome: 'executed', value: 'took over' });
    expect(code(await rejected(stuck))).toBe('ERR_LEASE_LOST');
  });
});

describe('bad input: typed errors, nothing changes', () => {
  const store = memoryStore();
  it.each([
    [{ store: {} as Store }, 'store'],
    [{ name: '' }, 'name'],
    [{ name: 'x'.repeat(257) }, 'name'],
    [{ lease: 0 }, 'lease'],
    [{ lease: 'soon' as '1s' }, 'lease'],
    [{ lease: 2 ** 31 }, 'lease'],
    [{ ttl: 0 }, 'ttl'],
    [{ ttl: -1 }, 'ttl'],
    [{ hashPayload: 'yes' as unknown as boolean }, 'hashPayload'],
    [{ maxResultBytes: 0 }, 'maxResultBytes'],
    [{ maxResultBytes: 1.5 }, 'maxResultBytes'],
    [{ serializer: { serialize: () => '' } as never }, 'serializer'],
  ])('createIdempotency(%o) names %s', (options, option) => {
    let caught: unknown;
    try {
      createIdempotency({ store, ...options });
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ option });
    expect(['ERR_INVALID_OPTION', 'ERR_INVALID_DURATION']).toContain(code(caught));
  });

  it('the messages are the usual ones', () => {
    let caught: unknown;
    try {
      createIdempotency({ maxResultBytes: 0 });
    } catch (err) {
      caught = err;
    }
    expect(String(caught)).toBe(
      "OnceflowError [ERR_INVALID_OPTION]: Expected `maxResultBytes` to be a positive safe integer of at most 536870912 (512 MiB, Redis's largest argument), got `0` (number)",
    );
    expect(() => createIdempotency({ store: {} as Store })).toThrow(
      /Expected `store` to be a store with idempotencyBegin, idempotencyRenew, idempotencyComplete, idempotencyRelease/,
    );
  });

  it('bad keys, payloads, fns and waits are refused before any store call', async () => {
    let begins = 0;
    const base = memoryStore();
    const spy = wrapStore(base, {
      idempotencyBegin: (cmd) => {
        begins++;
        return base.idempotencyBegin!(cmd);
      },
    });
    const idem = createIdempotency({ store: spy });
    const fn = () => 1;
    const bad: [Promise<unknown>, string][] = [
      [idem.run({ key: '' }, fn), 'key'],
      [idem.run({ key: '\ud800' }, fn), 'key'],
      [idem.run({ key: 'x'.repeat(513) }, fn), 'key'],
      [idem.run({ key: 'k', payload: { f: () => 1 } }, fn), 'payload.f'],
      [idem.run({ key: 'k', payload: [Number.NaN] }, fn), 'payload[0]'],
      [idem.run({ key: 'k', payload: new Map() }, fn), 'payload'],
      [idem.run({ key: 'k', payload: 'x'.repeat(1_048_576) }, fn), 'payload'],
      [idem.run({ key: 'k' }, 'fn' as never), 'fn'],
      [idem.run({ key: 'k' }, fn, { wait: 'forever' as never }), 'wait'],
      [idem.run(null as never, fn), 'call'],
    ];
    for (const [promise, path] of bad) {
      const err = await rejected(promise);
      expect(code(err)).toBe('ERR_INVALID_ARGUMENT');
      expect(err).toMatchObject({ path });
    }
    expect(begins).toBe(0);
    // A payload just under the bound passes: 1 MiB of canonical JSON, quotes included.
    expect((await idem.run({ key: 'k', payload: 'x'.repeat(1_048_574) }, fn)).outcome).toBe('executed');
    expect((await idem.run({ key: 'x'.repeat(512) }, fn)).outcome).toBe('executed');
  });

  it('a store error from begin rejects with it; nothing ran', async () => {
    const store = wrapStore(memoryStore(), { idempotencyBegin: () => Promise.reject(new Error('down')) });
    let runs = 0;
    const err = await rejected(createIdempotency({ store }).run({ key: 'k' }, () => ++runs));
    expect((err as Error).message).toBe('down');
    expect(runs).toBe(0);
  });
});
