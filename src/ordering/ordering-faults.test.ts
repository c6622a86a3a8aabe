// The ordering half under faults: hooks that throw, restarts, stale checkpoints, idle leases,
// clock readings that are not numbers, and bad input that must change nothing.
import { describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../core/clock.js';
import { isOnceflowError } from '../core/errors.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { type GapRange, ReorderBuffer } from '../windows/reorder-buffer.js';
import { createCompensator } from './compensator.js';
import { createReorderer } from './reorderer.js';
import { Snowflake } from './snowflake.js';
import { VersionGate } from './version-gate.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const code = (err: unknown) => (isOnceflowError(err) ? err.code : String(err));

describe('reorderer', () => {
  it('an onGap that throws loses no release: they are delivered, then the failure stops the run', async () => {
    const out: number[] = [];
    const r = await createReorderer<number>({
      next: 0,
      capacity: 4,
      gapTimeout: '1h',
      clock: new FakeClock(0),
      onRelease: (x) => {
        out.push(x.seq);
      },
      onGap: () => {
        throw new Error('compensator down');
      },
    });
    r.push(1, 1);
    r.push(2, 2);
    expect(() => r.push(9, 9)).not.toThrow(); // overflow: 0 given up, 1 and 2 released
    await expect(r.drained()).rejects.toThrow('compensator down');
    expect(out).toEqual([1, 2]);
    expect(() => r.push(10, 10)).toThrow('compensator down');
  });

  it('a throwing onGap on the timer path is reported, never an uncaught exception', async () => {
    const out: number[] = [];
    const r = await createReorderer<number>({
      next: 0,
      capacity: 8,
      gapTimeout: '10ms',
      onRelease: (x) => {
        out.push(x.seq);
      },
      onGap: () => {
        throw new Error('alerting down');
      },
    });
    r.push(1, 1);
    await sleep(80);
    await expect(r.drained()).rejects.toThrow('alerting down');
    expect(out).toEqual([1]);
  });

  it('a restarted consumer releases what it restored when the timeout falls due, and reports the holes again', async () => {
    const store = memoryStore();
    const make = (out: number[], gaps: GapRange[]) =>
      createReorderer<number>({
        next: 0,
        capacity: 8,
        gapTimeout: '20ms',
        onRelease: (x) => {
          out.push(x.seq);
        },
        onGap: (g) => {
          gaps.push(g);
        },
        checkpoint: { store, name: 'restart' },
      });
    const first = await make([], []);
    first.push(1, 1);
    first.push(2, 2);
    first.push(5, 5);
    await first.close();
    const out: number[] = [];
    const gaps: GapRange[] = [];
    const second = await make(out, gaps);
    await sleep(150); // no push: the timer alone must act
    expect(out).toEqual([1, 2, 5]);
    expect(gaps).toEqual([
      { from: 0, to: 0 },
      { from: 3, to: 4 },
    ]);
    await second.close();
  });

  it('a restart on a process-relative clock keeps the holes the age they had, not the old uptime', async () => {
    const store = memoryStore();
    const old = new FakeClock(10_000_000);
    const first = await createReorderer<number>({
      next: 0,
      capacity: 8,
      gapTimeout: '250ms',
      clock: old,
      onRelease: () => {},
      checkpoint: { store, name: 'uptime' },
    });
    first.push(2, 2);
    old.advance(100); // the hole at 0, 1 is 100 ms old when saved
    first.push(3, 3);
    await first.close();
    const fresh = new FakeClock(1_000);
    const gaps: GapRange[] = [];
    const second = await createReorderer<number>({
      next: 0,
      capacity: 8,
      gapTimeout: '250ms',
      clock: fresh,
      onRelease: () => {},
      onGap: (g) => {
        gaps.push(g);
      },
      checkpoint: { store, name: 'uptime' },
    });
    fresh.advance(149);
    expect(second.buffer.tick().gaps).toEqual([]);
    fresh.advance(1); // 100 + 150 = 250 ms: due
    expect(second.buffer.tick().gaps).toEqual([{ from: 0, to: 1 }]);
    await second.close();
  });

  it('a run whose checkpoint was overtaken by another run stops instead of overwriting it', async () => {
    const store = memoryStore();
    const clock = new FakeClock(0);
    const make = () =>
      createReorderer<number>({
        next: 0,
        capacity: 8,
        gapTimeout: '1h',
        clock,
        onRelease: () => {},
        checkpoint: { store, name: 'owner', every: 1 },
      });
    const a = await make();
    a.push(0, 0);
    await a.drained(); // revision 1, next 1
    const b = await make(); // the new owner
    for (let s = 1; s <= 5; s++) b.push(s, s);
    await b.drained(); // revisions 2..6, next 6
    a.push(1, 1);
    const err = await a.drained().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(code(err)).toBe('ERR_STORE');
    expect(() => a.push(2, 2)).toThrow();
    const saved = await store.checkpointLoad?.('owner');
    expect(JSON.parse(saved?.data ?? '{}').snapshot.next).toBe(6);
  });

  it('two runs sharing a checkpoint name and saving the very same state: the second is still stopped', async () => {
    const store = memoryStore();
    const clock = new FakeClock(1_000_000);
    const make = (out: number[]) =>
      createReorderer<number>({
        next: 1,
        capacity: 16,
        gapTimeout: '1s',
        clock,
        onRelease: (r) => void out.push(r.seq),
        checkpoint: { store, name: 'cp', every: 1 },
      });
    const outA: number[] = [];
    const outB: number[] = [];
    const a = await make(outA);
    const b = await make(outB); // both loaded nothing
    for (const s of [1, 2, 3]) {
      a.push(s, s);
      b.push(s, s);
    }
    const errors = await Promise.all(
      [a.close(), b.close()].map((p) =>
        p.then(
          () => undefined,
          (e: unknown) => e,
        ),
      ),
    );
    expect(errors.filter((e) => e !== undefined).map(code)).toEqual(['ERR_STORE']);
    expect(outA.length + outB.length).toBeLessThan(6); // one of them stopped early
  });
});

describe('ReorderBuffer', () => {
  it('a time that is not finite is a typed error and holds nothing', () => {
    for (const now of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN]) {
      const b = new ReorderBuffer<string>({ capacity: 4, gapTimeout: '10ms' });
      expect(
        code(
          (() => {
            try {
              b.push(2, 'x', now);
            } catch (e) {
              return e;
            }
          })(),
        ),
      ).toBe('ERR_INVALID_ARGUMENT');
      expect(b.buffered).toBe(0);
      expect(() =>
        new ReorderBuffer<string>({ capacity: 4, gapTimeout: '10ms' }).restore(b.snapshot()),
      ).not.toThrow();
    }
  });

  it('counts the missing numbers of a restored state exactly near 2^53', () => {
    const base = Number.MAX_SAFE_INTEGER - 60;
    const b = new ReorderBuffer<number>({ next: base, capacity: 7, gapTimeout: 10 });
    b.push(base + 35, 1, 0);
    b.push(base, 1, 0);
    b.tick(100);
    const before = b.stats().missing;
    const c = new ReorderBuffer<number>({ next: base, capacity: 7, gapTimeout: 10 });
    c.restore(JSON.parse(JSON.stringify(b.snapshot())));
    expect(c.stats().missing).toBe(before);
    expect(c.missing()).toEqual(b.missing());
  });
});

describe('compensator', () => {
  it('a range the source accepted leaves the lane; adding it again requests it again', async () => {
    const asked: GapRange[] = [];
    const lane = createCompensator({
      request: async (range) => {
        asked.push(range);
      },
    });
    for (let i = 0; i < 100; i++) lane.add({ from: i * 10, to: i * 10 });
    await lane.idle();
    expect(lane.pending()).toEqual([]);
    lane.add({ from: 0, to: 0 });
    await lane.idle();
    expect(asked.filter((r) => r.from === 0)).toHaveLength(2);
    lane.close();
  });

  it('add() with one bad range takes none of them', async () => {
    const asked: GapRange[] = [];
    const lane = createCompensator({
      request: async (range) => {
        asked.push(range);
      },
    });
    expect(() =>
      lane.add([
        { from: 1, to: 2 },
        { from: 5, to: 3 },
      ]),
    ).toThrow(/gaps\[1\]/);
    expect(lane.pending()).toEqual([]);
    await lane.idle();
    await sleep(20);
    expect(asked).toEqual([]);
    lane.close();
  });
});

describe('Snowflake', () => {
  it('an idle generator keeps its lease: ids after a long pause come without an error', async () => {
    // Fake timers and a fake Date (the store's clock and the generator's): the renewal timer
    // fires on time whatever the machine's load, which real 40 ms leases cannot count on.
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    try {
      const clock = { now: () => Date.now() };
      const store = memoryStore({ clock });
      const ids = await Snowflake.start({ worker: 1, store, name: 'idle', lease: '40ms', clock });
      const first = ids.next();
      await vi.advanceTimersByTimeAsync(150); // several lease lengths without an id
      const second = ids.next();
      expect(second > first).toBe(true);
      ids.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a clock reading that is not a number is a typed error and changes nothing: no id repeats', () => {
    const t = Date.UTC(2026, 0, 1);
    let bad = false;
    const ids = new Snowflake({ worker: 1, clock: { now: () => (bad ? Number.NaN : t) }, wait: () => {} });
    const a = ids.next();
    bad = true;
    expect(
      code(
        (() => {
          try {
            ids.next();
          } catch (e) {
            return e;
          }
        })(),
      ),
    ).toBe('ERR_INVALID_ARGUMENT');
    bad = false;
    expect(ids.next() > a).toBe(true);
  });

  it('start() checks rollbackToleranceMs before waiting out a persisted lease', async () => {
    const store = memoryStore();
    await store.timestampAdvance?.('tol', Date.now() + 1000);
    const err = await Snowflake.start({
      worker: 1,
      store,
      name: 'tol',
      rollbackToleranceMs: Number.NaN,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(code(err)).toBe('ERR_INVALID_OPTION');
  });
});

describe('VersionGate', () => {
  it('a value JSON cannot encode is a typed error', async () => {
    const gate = new VersionGate({ store: memoryStore() });
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    for (const value of [{ a: 1n }, cyclic]) {
      const err = await gate.upsert('k', 1, value as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(code(err)).toBe('ERR_INVALID_ARGUMENT');
    }
    expect(await gate.get('k')).toBeUndefined();
  });

  it('a value JSON would change silently (NaN, an undefined property, a Date) is refused, naming the place', async () => {
    const gate = new VersionGate({ store: memoryStore() });
    const cases: [unknown, string][] = [
      [Number.NaN, 'value'],
      [{ a: undefined }, 'value.a'],
      [{ at: new Date(0) }, 'value.at'],
      [[1, Number.POSITIVE_INFINITY], 'value[1]'],
    ];
    for (const [value, path] of cases) {
      const err = await gate.upsert('k', 1, value as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(code(err)).toBe('ERR_INVALID_ARGUMENT');
      expect((err as { path: string }).path).toBe(path);
    }
    expect(await gate.get('k')).toBeUndefined();
    expect((await gate.upsert('k', 1, { a: [1, 'x', null, -0] })).outcome).toBe('applied');
    expect((await gate.get('k'))?.value).toEqual({ a: [1, 'x', null, 0] });
  });
});

describe('corrupt store data', () => {
  it('a checkpoint that is not JSON, or a version or value that does not parse, is a typed store error', async () => {
    const store = memoryStore();
    await store.checkpointSave?.('cp', 1, '{not json');
    const err = await createReorderer({
      capacity: 4,
      gapTimeout: '1s',
      onRelease: () => {},
      checkpoint: { store, name: 'cp' },
    }).catch((e: unknown) => e);
    expect(code(err)).toBe('ERR_STORE');
    expect(String(err)).toMatch(/checkpoint 'cp' is not JSON/);

    await store.checkpointSave?.('shape', 1, '{"format":"onceflow.reorder.v1","next":-1}');
    const shape = await createReorderer({
      capacity: 4,
      gapTimeout: '1s',
      onRelease: () => {},
      checkpoint: { store, name: 'shape' },
    }).catch((e: unknown) => e);
    expect(code(shape)).toBe('ERR_STORE');
    expect(String(shape)).toMatch(/saved.next/);

    for (const version of ['', ' 7 ', '0x10', '1e3', '-0']) {
      const odd = new VersionGate({
        store: {
          kind: 'odd',
          versionUpsert: async () => ({ outcome: 'applied', version }),
          versionGet: async () => undefined,
        } as never,
        name: 'g',
      });
      expect(code(await odd.upsert('k', 1, {}).catch((e: unknown) => e))).toBe('ERR_STORE');
    }
    const broken = {
      kind: 'broken',
      versionUpsert: async () => ({ outcome: 'applied', version: 'v1' }),
      versionGet: async () => ({ version: '3', value: '{oops' }),
    };
    const gate = new VersionGate({ store: broken as never, name: 'g' });
    const upserted = await gate.upsert('k', 1, {}).catch((e: unknown) => e);
    expect(code(upserted)).toBe('ERR_STORE');
    expect(String(upserted)).toMatch(/stored version "v1" is not an integer/);
    const read = await gate.get('k').catch((e: unknown) => e);
    expect(code(read)).toBe('ERR_STORE');
    expect(String(read)).toMatch(/the value under 'k' is not JSON/);
  });
});
