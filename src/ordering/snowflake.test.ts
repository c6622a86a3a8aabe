import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { Snowflake } from './snowflake.js';

const T0 = Date.UTC(2026, 0, 1);
const fake = (worker = 1, start = T0, extra = {}) => {
  const clock = new FakeClock(start);
  const waits: number[] = [];
  const ids = new Snowflake({
    worker,
    clock,
    wait: (ms) => {
      waits.push(ms);
      clock.advance(ms);
    },
    ...extra,
  });
  return { clock, ids, waits };
};

describe('Snowflake', () => {
  afterEach(() => vi.restoreAllMocks());

  it('waits out a backward jump within the tolerance, and ids keep increasing', () => {
    const { clock, ids, waits } = fake();
    const a = ids.next();
    clock.set(T0 - 5); // exactly the default tolerance of 5 ms
    const b = ids.next();
    expect(b > a).toBe(true);
    expect(waits).toEqual([5]);
    expect(ids.decode(b).timestamp).toBe(T0);
  });

  it('throws ERR_CLOCK_ROLLBACK on a backward jump beyond the tolerance, and issues nothing', () => {
    const { clock, ids } = fake(1, T0, { rollbackToleranceMs: 5 });
    const a = ids.next();
    clock.set(T0 - 6);
    let caught: unknown;
    try {
      ids.next();
    } catch (err) {
      caught = err;
    }
    expect(isOnceflowError(caught, 'ERR_CLOCK_ROLLBACK')).toBe(true);
    expect(String(caught)).toContain('6 ms behind');
    clock.set(T0 + 1);
    expect(ids.next() > a).toBe(true);
  });

  it('a clock that keeps falling back while waiting is caught too', () => {
    const clock = new FakeClock(T0);
    const ids = new Snowflake({ worker: 0, clock, wait: () => clock.set(clock.now() - 10) });
    ids.next();
    clock.set(T0 - 2);
    expect(() => ids.next()).toThrow(/behind/);
  });

  it('sequence exhaustion waits for the next millisecond', () => {
    const { ids, waits } = fake();
    const got = Array.from({ length: 4097 }, () => ids.next());
    expect(ids.decode(got[4095] as bigint)).toMatchObject({ timestamp: T0, sequence: 4095 });
    expect(ids.decode(got[4096] as bigint)).toMatchObject({ timestamp: T0 + 1, sequence: 0 });
    expect(waits).toEqual([1]);
  });

  // 200,000 ids: 67 milliseconds of 750 ids per worker each, so the time bits move on 67 times
  // while the workers' ids interleave; a time shift that overlaps the worker bits collides at once.
  it('200,000 ids from 4 workers on one clock: increasing per worker, unique overall', () => {
    const clock = new FakeClock(T0);
    const workers = [0, 1, 513, 1023].map(
      (worker) => new Snowflake({ worker, clock, wait: (ms) => clock.advance(ms) }),
    );
    const last = workers.map(() => -1n);
    const all = new Set<bigint>();
    let notIncreasing = 0;
    for (let i = 0; i < 200_000; i++) {
      const w = i & 3;
      if (i % 3000 === 0) clock.advance(1); // time moves on now and then; exhaustion does the rest
      const id = (workers[w] as Snowflake).next();
      if (id <= (last[w] as bigint)) notIncreasing++;
      last[w] = id;
      all.add(id);
    }
    expect(notIncreasing).toBe(0);
    expect(all.size).toBe(200_000);
  });

  it('decode round-trips every field for any layout, worker, time and sequence', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 0, max: 14 }),
        fc.nat(),
        fc.integer({ min: 0, max: 5000 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (workerBits, sequenceBits, w, n, offset) => {
          const worker = w % 2 ** workerBits;
          const { ids } = fake(worker, T0 + offset, { workerBits, sequenceBits, epoch: T0, lifetime: 0 });
          let prev = -1n;
          for (let i = 0; i < n % 50; i++) {
            const id = ids.next();
            const d = ids.decode(id);
            expect(d.worker).toBe(worker);
            const rebuilt =
              (BigInt(d.timestamp - T0) << BigInt(workerBits + sequenceBits)) |
              (BigInt(d.worker) << BigInt(sequenceBits)) |
              BigInt(d.sequence);
            expect(rebuilt).toBe(id);
            expect(id > prev).toBe(true);
            prev = id;
          }
        },
      ),
    );
  });

  it('the default clock is anchored: the wall clock stepping back at run time changes nothing', () => {
    const ids = new Snowflake({ worker: 3 });
    const a = ids.next();
    const realNow = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(realNow - 3_600_000);
    const b = ids.next();
    expect(b > a).toBe(true);
    expect(ids.decode(b).timestamp).toBeGreaterThanOrEqual(realNow - 5);
  });

  it('a persisted last timestamp ahead of the clock: waited out within tolerance, refused beyond', () => {
    const { ids } = fake(1, T0, { lastTimestamp: T0 + 3 });
    expect(ids.decode(ids.next()).timestamp).toBe(T0 + 4);
    let caught: unknown;
    try {
      fake(1, T0, { lastTimestamp: T0 + 60_000 });
    } catch (err) {
      caught = err;
    }
    expect(isOnceflowError(caught, 'ERR_CLOCK_ROLLBACK')).toBe(true);
    expect(String(caught)).toContain('60000 ms behind the last timestamp used (persisted before a restart)');
  });

  it('a lease longer than setInterval allows (60 days) is renewed on a clamped interval, not every millisecond', async () => {
    const spy = vi.spyOn(globalThis, 'setInterval');
    const clock = new FakeClock(T0);
    const flake = await Snowflake.start({
      worker: 1,
      store: memoryStore(),
      name: 'long',
      clock,
      lease: '60d',
    });
    const delays = spy.mock.calls.map((call) => Number(call[1]));
    spy.mockRestore();
    flake.close();
    expect(delays).toEqual([2 ** 31 - 1]);
  });

  it('a restart inside a 60-day lease waits in clamped timer steps (not a 1 ms busy loop) until the lease is past', async () => {
    vi.useFakeTimers();
    const store = memoryStore();
    const clock = new FakeClock(T0);
    const first = await Snowflake.start({ worker: 1, store, name: 'long-restart', clock, lease: '60d' });
    first.next();
    first.close();
    const spy = vi.spyOn(globalThis, 'setTimeout');
    let started: Snowflake | undefined;
    const second = Snowflake.start({ worker: 1, store, name: 'long-restart', clock, lease: '60d' }).then(
      (s) => {
        started = s;
      },
    );
    await vi.advanceTimersByTimeAsync(0);
    const delays = spy.mock.calls.map((call) => Number(call[1]));
    expect(delays).toEqual([2 ** 31 - 1]);
    expect(started).toBeUndefined();
    // Once the clock has passed the old lease, the next (clamped) firing lets the start finish.
    clock.advance(60 * 86_400_000);
    await vi.advanceTimersByTimeAsync(2 ** 31 - 1);
    await second;
    expect(started).toBeInstanceOf(Snowflake);
    spy.mockRestore();
    started?.close();
    vi.useRealTimers();
  });

  it('restart through a store: the lease of the last run is respected; a clock behind it is caught', async () => {
    const store = memoryStore();
    const clock = new FakeClock(T0);
    const wait = (ms: number) => clock.advance(ms);
    const first = await Snowflake.start({ worker: 1, store, name: 'orders', clock, wait, lease: '1s' });
    const before = first.next();
    clock.advance(700); // past half the lease: a renewal starts
    first.next();
    await new Promise((r) => setImmediate(r));
    // The host restarts with its clock 10 minutes behind.
    const behind = new FakeClock(T0 - 600_000);
    await expect(
      Snowflake.start({ worker: 1, store, name: 'orders', clock: behind, wait: (ms) => behind.advance(ms) }),
    ).rejects.toMatchObject({ code: 'ERR_CLOCK_ROLLBACK' });
    // A quick restart, 700 ms into the lease: it waits until the clock has passed the lease.
    const quick = new FakeClock(T0 + 1000);
    const waits: number[] = [];
    const restarted = await Snowflake.start({
      worker: 1,
      store,
      name: 'orders',
      clock: quick,
      lease: '1s',
      wait: (ms) => {
        waits.push(ms);
        quick.advance(ms);
      },
    });
    expect(waits[0]).toBe(700 - 5); // down to the tolerance asynchronously, the rest in next()
    expect(restarted.decode(restarted.next()).timestamp).toBe(T0 + 1701);
    // With a clock 2 ms behind the lease it waits, and the new ids are above every old one.
    const lease = (await store.timestampAdvance?.('orders', -1)) as number;
    expect(lease).toBeGreaterThanOrEqual(T0 + 700 + 1000);
    const near = new FakeClock(lease - 2);
    const second = await Snowflake.start({
      worker: 1,
      store,
      name: 'orders',
      clock: near,
      wait: (ms) => near.advance(ms),
    });
    const after = second.next();
    expect(after > before).toBe(true);
    expect(second.decode(after).timestamp).toBe(lease + 1);
  });

  it('refuses to run past its lease when the store cannot renew it', async () => {
    const store = memoryStore();
    const clock = new FakeClock(T0);
    const ids = await Snowflake.start({
      worker: 1,
      store,
      name: 'x',
      clock,
      lease: '1s',
      wait: (ms) => clock.advance(ms),
    });
    store.leaseRenew = async () => {
      throw new Error('store down');
    };
    clock.advance(600);
    ids.next(); // starts a renewal, which fails
    await new Promise((r) => setImmediate(r));
    clock.advance(500);
    expect(() => ids.next()).toThrow(/store down/);
  });

  it('close() stops the lease: no renewal after it, and ids fail once the lease runs out', async () => {
    const store = memoryStore();
    const writes: number[] = [];
    const advance = store.timestampAdvance!.bind(store);
    store.timestampAdvance = async (name, ms) => {
      if (ms >= 0) writes.push(ms);
      return advance(name, ms);
    };
    const clock = new FakeClock(T0);
    const ids = await Snowflake.start({
      worker: 1,
      store,
      name: 'c',
      lease: '100ms',
      clock,
      wait: (ms) => clock.advance(ms),
    });
    ids.close();
    const written = writes.length;
    let issued = 0;
    let error: unknown;
    for (let i = 0; i < 20 && error === undefined; i++) {
      clock.advance(40);
      try {
        ids.next();
        issued++;
      } catch (err) {
        error = err;
      }
      await new Promise((r) => setImmediate(r)); // a renewal would land here
    }
    expect(writes).toHaveLength(written);
    expect(issued).toBe(2); // at +40 and +80 ms, inside the 100 ms lease
    expect(isOnceflowError(error, 'ERR_STORE')).toBe(true);
    expect(String(error)).toMatch(/closed/);
  });

  it('a renewal answered after close(), or one that finds another run ahead, is not taken as this lease', async () => {
    const inner = memoryStore();
    let hold: (() => void) | undefined;
    let holdNext = false;
    const store = wrapStore(inner, {
      async leaseRenew(name: string, run: string, ms: number, takeover: number | undefined) {
        if (holdNext) {
          holdNext = false;
          await new Promise<void>((r) => (hold = r));
        }
        return inner.leaseRenew!(name, run, ms, takeover);
      },
    });
    const clock = new FakeClock(T0);
    const options = {
      worker: 1,
      store,
      name: 'ids',
      lease: 1000,
      clock,
      wait: (ms: number) => clock.advance(ms),
    };
    const a = await Snowflake.start(options);
    a.next();
    clock.advance(600);
    holdNext = true;
    a.next(); // past half the lease: a renewal goes out, its answer held
    a.close();
    const b = await Snowflake.start(options); // waits out a's lease, takes the next one
    const ofB = new Set([b.next(), b.next()]);
    hold?.();
    await new Promise((r) => setImmediate(r));
    expect(() => a.next()).toThrow(/closed/);

    // Two live generators under one name: a renewal that finds the other's later lease keeps its
    // own and fails once that runs out, never issuing an id of the other's milliseconds.
    const c = await Snowflake.start({ ...options, name: 'shared' });
    clock.advance(600);
    holdNext = true;
    c.next(); // renewal out, answer held
    const d = await Snowflake.start({ ...options, name: 'shared' }); // waits out c's first lease
    const first = d.decode(d.next()).timestamp;
    hold?.();
    await new Promise((r) => setImmediate(r));
    // d's ids start past c's lease, and c cannot go past it: its renewal found d's lease.
    expect(() => c.next()).toThrow(/another run holds 'shared'/);
    expect(first).toBeGreaterThan(T0 + 600);
    for (const id of ofB) expect(typeof id).toBe('bigint');
    b.close();
    c.close();
    d.close();
  });

  it('the store records which run holds a name: a second live generator under it is refused at start', async () => {
    const store = memoryStore();
    const clock = new FakeClock(T0);
    const options = {
      worker: 3,
      store,
      name: 'twin',
      lease: 1000,
      clock,
      wait: (ms: number) => clock.advance(ms),
    };
    const first = await Snowflake.start(options);
    first.next();
    clock.advance(600);
    first.next(); // past half the lease: renewed to 1600
    await new Promise((r) => setImmediate(r));
    // The second run reads the lease and waits it out, while the first (alive) keeps issuing ids
    // and renews it: the second finds it renewed and is refused, having issued nothing.
    const twin = {
      ...options,
      wait: (ms: number) => {
        clock.advance(ms);
        first.next();
      },
    };
    const err = await Snowflake.start(twin).catch((e: unknown) => e);
    expect(isOnceflowError(err, 'ERR_STORE')).toBe(true);
    expect(String(err)).toMatch(/another run holds 'twin'/);
    expect(() => first.next()).not.toThrow();
    first.close();
  });

  it('a takeover is a compare-and-set on the lease read: a twin whose wait overshoots a renewal is refused', async () => {
    const store = memoryStore();
    const clockA = new FakeClock(T0);
    const clockB = new FakeClock(T0);
    const a = await Snowflake.start({
      worker: 3,
      store,
      name: 'n',
      lease: 1000,
      clock: clockA,
      wait: (ms) => clockA.advance(ms),
    });
    a.next();
    clockA.advance(400);
    clockB.advance(400);
    // B reads the lease (T0+1000) and waits; meanwhile A renews it (to T0+1500) and stalls, and
    // B wakes late, when that renewal has also run out on its clock. B still must not take over:
    // it would start after T0+1000, inside A's renewed lease.
    let renewed = false;
    const b = Snowflake.start({
      worker: 3,
      store,
      name: 'n',
      lease: 1000,
      clock: clockB,
      wait: (ms) => {
        if (!renewed) {
          renewed = true;
          clockA.advance(100);
          a.next(); // A at T0+500: renews
        }
        clockB.advance(ms + 500); // an overshooting wait
      },
    });
    const err = await b.catch((e: unknown) => e);
    expect(isOnceflowError(err, 'ERR_STORE')).toBe(true);
    expect(String(err)).toMatch(/another run holds 'n'/);
    a.close();
  });

  it('start checks every option before it reads the store or waits out a quick restart', async () => {
    const store = memoryStore();
    const clock = new FakeClock(T0);
    const first = await Snowflake.start({ worker: 1, store, name: 'checked', clock, lease: '1h' });
    first.next();
    let waited = 0;
    const wait = (ms: number) => {
      waited += ms;
      clock.advance(ms);
    };
    for (const bad of [{ worker: -1 }, { worker: 1, wait: 'spin' }, { worker: 1, epoch: -5 }]) {
      const err = await Snowflake.start({
        wait,
        ...bad,
        store,
        name: 'checked',
        clock,
        lease: '1h',
      } as never).catch((e: unknown) => e);
      expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    }
    expect(waited).toBe(0); // refused at once, not after the hour's lease
    first.close();
  });

  it('a lease no longer than twice the rollback tolerance is refused: a live run could not be told from a restart', async () => {
    const store = memoryStore();
    for (const lease of [10, 4]) {
      const err = await Snowflake.start({ worker: 1, store, name: 'short', lease }).catch((e: unknown) => e);
      expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
      expect(String(err)).toMatch(/`lease` to be longer than twice rollbackToleranceMs \(10 ms\)/);
    }
    const ok = await Snowflake.start({ worker: 1, store, name: 'short', lease: 4, rollbackToleranceMs: 1 });
    ok.close();
  });

  it('start() keeps a given lastTimestamp later than the store one: no issued millisecond is used again', async () => {
    const store = memoryStore();
    await store.timestampAdvance!('g', T0 - 60_000);
    const clock = new FakeClock(T0);
    const ids = await Snowflake.start({
      worker: 1,
      store,
      name: 'g',
      clock,
      lastTimestamp: T0 + 3,
      wait: (ms) => clock.advance(ms),
    });
    expect(ids.decode(ids.next()).timestamp).toBeGreaterThan(T0 + 3);
    ids.close();
  });

  it('refuses an id past the end of its layout (it would not fit 63 bits), changing nothing', () => {
    const epoch = T0;
    const clock = new FakeClock(epoch);
    const ids = new Snowflake({
      worker: 1,
      epoch,
      sequenceBits: 21,
      lifetime: '1d',
      clock,
      wait: (ms) => clock.advance(ms),
    });
    const last = ids.next();
    clock.advance(2 ** 32); // 32 time bits: one past the last millisecond they number
    let caught: unknown;
    try {
      ids.next();
    } catch (err) {
      caught = err;
    }
    expect(isOnceflowError(caught, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect(String(caught)).toMatch(/`clock.now\(\)` to be a time the layout can number/);
    clock.set(epoch + 2 ** 32 - 1); // the last one still works, after the refused call
    const next = ids.next();
    expect(next > last && next < 2n ** 63n).toBe(true);
  });

  it('says at construction when the layout would run out within the lifetime', () => {
    expect(() => new Snowflake({ worker: 1, epoch: Date.UTC(1970, 0, 1), lifetime: '5000d' })).toThrow(
      /41 time bits from epoch 1970-01-01T00:00:00.000Z run out at 2039-09-07/,
    );
    expect(() => new Snowflake({ worker: 1, workerBits: 16, sequenceBits: 12, lifetime: '3650d' })).toThrow(
      /lifetime/,
    );
    expect(() => new Snowflake({ worker: 1024 })).toThrow(/`worker` to be an integer in 0..1023/);
    expect(() => new Snowflake({ worker: 1, epoch: Date.now() + 86_400_000 })).toThrow(/epoch/);
  });
});
