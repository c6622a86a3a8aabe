import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createHeartbeat } from './heartbeat.js';
import { createStallMeter } from './stall-meter.js';

/** A fake node: a monotonic clock and a meter that knows its stalls exactly (the ongoing one too). */
function fakeNode() {
  const node = {
    t: 0,
    stalls: [] as Array<[number, number]>,
    /** Blocks the loop for `ms`: time passes, all of it stalled. */
    stall(ms: number) {
      node.stalls.push([node.t, node.t + ms]);
      node.t += ms;
    },
    meter: { stalledMs: () => overlap(node.stalls, 0, node.t) },
    now: () => node.t,
  };
  return node;
}

function overlap(stalls: ReadonlyArray<readonly [number, number]>, from: number, to: number): number {
  let sum = 0;
  for (const [s, e] of stalls) sum += Math.max(0, Math.min(e, to) - Math.max(s, from));
  return sum;
}

describe('heartbeat', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it('never reads the wall clock: Date.now throwing, or skewed by hours, changes nothing', () => {
    const node = fakeNode();
    const hb = createHeartbeat<string>({ interval: 1000, timeout: 3000, now: node.now, stalls: node.meter });
    vi.spyOn(Date, 'now').mockImplementation(() => {
      throw new Error('the wall clock was read');
    });
    hb.touch('a');
    hb.touch('b');
    for (let i = 0; i < 10; i++) {
      node.t += 1000;
      hb.touch('a');
      const dead = hb.sweep();
      if (node.t <= 3000) expect(dead).toEqual([]);
      if (node.t === 4000) expect(dead).toEqual(['b']);
    }
    expect([...hb.ids()]).toEqual(['a']);
    vi.restoreAllMocks();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 7_200_000); // the wall clock jumps 2 h forward
    expect(hb.sweep()).toEqual([]);
    vi.setSystemTime(0); // and back to 1970
    expect(hb.sweep()).toEqual([]);
  });

  it('an injected 2 s stall drops no healthy client, even when the sweep runs before the sockets are read', () => {
    const node = fakeNode();
    const hb = createHeartbeat<number>({ interval: 500, timeout: 1500, now: node.now, stalls: node.meter });
    for (let id = 0; id < 100; id++) hb.touch(id);
    node.t += 1000; // 1 s awake, silent
    node.stall(2000); // then 2 s blocked: 3 s of monotonic silence, twice `timeout`
    // libuv runs due timers before polling sockets: the sweep comes first.
    expect(hb.sweep()).toEqual([]);
    expect(hb.silentMs(0)).toBe(1000);
    for (let id = 0; id < 100; id++) hb.touch(id);
    expect(hb.size).toBe(100);
  });

  it('tells each false timeout it suppressed once, at the client’s next frame, with the stall it discounted; and each drop', () => {
    const node = fakeNode();
    const verdicts: Array<[number, string, number]> = [];
    const hb = createHeartbeat<number>({
      interval: 500,
      timeout: 1500,
      now: node.now,
      stalls: node.meter,
      onVerdict: (id, verdict, stalledMs) => verdicts.push([id, verdict, stalledMs]),
    });
    for (let id = 0; id < 4; id++) hb.touch(id);
    node.t += 1000;
    node.stall(2000); // 3 s monotonic silence, 1 s awake
    expect(hb.sweep()).toEqual([]);
    hb.touch(0); // spoke: a judge of the raw clock would have dropped it
    hb.touch(1);
    expect(verdicts).toEqual([
      [0, 'spared', 2000],
      [1, 'spared', 2000],
    ]);
    hb.touch(0); // silent 0 ms since: nothing to tell, and no second count of the same silence
    node.t += 400;
    hb.touch(1); // 400 ms silent: nothing
    expect(verdicts).toHaveLength(2);
    node.t += 200; // 2 and 3: 1.6 s awake silence, 3.6 s monotonic
    expect(hb.sweep()).toEqual([2, 3]);
    expect(verdicts.slice(2)).toEqual([
      [2, 'dropped', 2000],
      [3, 'dropped', 2000],
    ]);
    node.t += 1600; // 0 and 1 silent past `timeout` with no stall: dropped, nothing discounted
    expect(hb.sweep()).toEqual([0, 1]);
    expect(verdicts.slice(4)).toEqual([
      [0, 'dropped', 0],
      [1, 'dropped', 0],
    ]);
  });

  it('a throwing verdict listener changes no verdict', () => {
    const node = fakeNode();
    const hb = createHeartbeat<string>({
      interval: 500,
      timeout: 1500,
      now: node.now,
      stalls: node.meter,
      onVerdict: () => {
        throw new Error('listener bug');
      },
    });
    hb.touch('a');
    hb.touch('b');
    node.t += 1501;
    expect(hb.sweep()).toEqual(['a', 'b']);
    expect(hb.size).toBe(0);
  });

  it('drops a silent client after `timeout` of awake silence, not before, and within timeout + interval + stalls', () => {
    const node = fakeNode();
    const interval = 1000;
    const timeout = 3000;
    const hb = createHeartbeat<string>({ interval, timeout, now: node.now, stalls: node.meter });
    hb.touch('silent');
    let dropped: number | undefined;
    // Sweeps every interval, with a 700 ms stall after the second.
    for (let k = 1; dropped === undefined && k < 20; k++) {
      node.t += interval;
      if (k === 2) node.stall(700);
      if (hb.sweep().includes('silent')) dropped = node.t;
    }
    expect(dropped).toBeDefined();
    const d = dropped as number;
    expect(d - overlap(node.stalls, 0, d)).toBeGreaterThan(timeout);
    expect(d).toBeLessThanOrEqual(timeout + interval + overlap(node.stalls, 0, d));
  });

  it('for random activity and stalls: dropped only after `timeout` of awake silence, always within the bound', () => {
    const interval = 100;
    const timeout = 300;
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 900 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 6000 }), fc.integer({ min: 1, max: 2000 })), {
          maxLength: 5,
        }),
        (gaps, rawStalls) => {
          // Client 'c' sends after each gap (monotonic ms), then goes silent for good.
          const sends: number[] = [];
          let at = 0;
          for (const g of gaps) sends.push((at += g));
          // Disjoint stalls, sorted.
          const stalls: Array<[number, number]> = [];
          for (const [s, len] of [...rawStalls].sort((x, y) => x[0] - y[0])) {
            const from = Math.max(s, stalls.at(-1)?.[1] ?? 0);
            stalls.push([from, from + len]);
          }
          const inStall = (x: number) => stalls.find(([s, e]) => x > s && x < e);
          const processed = (x: number) => inStall(x)?.[1] ?? x; // read when the block ends
          const end =
            (sends.at(-1) as number) +
            timeout +
            interval +
            overlap(stalls, 0, Number.MAX_SAFE_INTEGER) +
            interval;
          // Events: sweeps every interval and reads, each moved past a stall; sweeps before reads.
          type Ev = { t: number; kind: 0 | 1 };
          const events: Ev[] = [];
          for (let s = interval; s <= end; s += interval) events.push({ t: processed(s), kind: 0 });
          for (const s of sends) events.push({ t: processed(s), kind: 1 });
          events.sort((x, y) => x.t - y.t || x.kind - y.kind);
          let t = 0;
          const meter = { stalledMs: () => overlap(stalls, 0, t) };
          const hb = createHeartbeat<string>({ interval, timeout, now: () => t, stalls: meter });
          hb.touch('c');
          let lastRead = 0;
          let dropped: number | undefined;
          for (const ev of events) {
            t = ev.t;
            if (ev.kind === 1) {
              if (dropped !== undefined) break;
              hb.touch('c');
              lastRead = t;
            } else if (hb.sweep().includes('c')) {
              dropped = t;
              // Sound: only after more than `timeout` of awake silence since the last read.
              expect(t - lastRead - overlap(stalls, lastRead, t)).toBeGreaterThan(timeout);
            }
          }
          // The awake gaps the client left (sends as read, with the node's stalls taken out).
          const reads = [0, ...sends.map(processed)];
          let healthy = true;
          for (let i = 1; i < reads.length; i++) {
            const a = reads[i - 1] as number;
            const b = reads[i] as number;
            if (b - a - overlap(stalls, a, b) > timeout) healthy = false;
          }
          if (healthy) {
            // Never dropped while it talked; dropped after it fell silent, within the bound.
            expect(dropped).toBeDefined();
            const d = dropped as number;
            expect(lastRead).toBe(reads.at(-1));
            expect(d - lastRead).toBeLessThanOrEqual(timeout + interval + overlap(stalls, lastRead, d));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('one timer: each interval it drops the dead, then pings the rest', () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const node = fakeNode();
    const hb = createHeartbeat<string>({ interval: 1000, timeout: 2500, now: node.now, stalls: node.meter });
    const log: string[] = [];
    hb.touch('a');
    hb.touch('b');
    const stop = hb.start({
      drop: (id) => log.push(`drop ${id}`),
      ping: (id) => {
        log.push(`ping ${id}`);
        if (id === 'a') hb.touch('a'); // answers at once
      },
    });
    for (let i = 0; i < 3; i++) {
      node.t += 1000;
      vi.advanceTimersByTime(1000);
    }
    stop();
    node.t += 5000;
    vi.advanceTimersByTime(5000);
    // Oldest activity first: 'a' answered, so 'b' comes before it on the second round.
    expect(log).toEqual(['ping a', 'ping b', 'ping b', 'ping a', 'drop b', 'ping a']);
  });

  it('refuses bad options by name, with typed errors', () => {
    const stalls = { stalledMs: () => 0 };
    const bad: Array<[object, string]> = [
      [{ intervall: '1s' }, 'intervall'],
      [{ interval: 0, stalls }, 'interval'],
      [{ interval: 2 ** 31, stalls }, 'interval'],
      [{ interval: '1s', timeout: '1s', stalls }, 'timeout'],
      [{ timeout: 2 ** 31, stalls }, 'timeout'],
      [{ interval: 'soon', stalls }, 'interval'],
      [{ now: 5, stalls }, 'now'],
      [{ stalls: {} }, 'stalls'],
      [{ onVerdict: 'log', stalls }, 'onVerdict'],
    ];
    for (const [options, option] of bad) {
      let caught: unknown;
      try {
        createHeartbeat(options as never);
      } catch (err) {
        caught = err;
      }
      expect(caught).toMatchObject({ option });
      expect((caught as { code: string }).code).toMatch(/^ERR_INVALID_(OPTION|DURATION)$/);
    }
  });

  it('with the real drift meter and clock: a real 2 s block drops no one, a silent client still goes', async () => {
    const meter = createStallMeter();
    try {
      const hb = createHeartbeat<string>({ interval: 100, timeout: 400, stalls: meter });
      await sleep(60); // a meter tick has run
      hb.touch('healthy');
      hb.touch('silent');
      const end = performance.now() + 2000;
      while (performance.now() < end) {
        // the node is blocked: it reads no socket
      }
      expect(hb.sweep()).toEqual([]); // the timer phase comes before the sockets are read
      hb.touch('healthy');
      // Awake time now runs again for 'silent': dropped once 400 ms of it passed (a loaded machine
      // only delays that, it never makes it early).
      const dropped: string[] = [];
      const started = performance.now();
      while (!dropped.includes('silent')) {
        await sleep(50);
        hb.touch('healthy');
        dropped.push(...hb.sweep());
      }
      expect(dropped).toEqual(['silent']);
      expect(performance.now() - started).toBeGreaterThan(400 - 60 - 50); // not before its awake timeout
    } finally {
      meter.stop();
    }
  });

  it('runs its example', () => {
    let t = 0;
    const hb = createHeartbeat<string>({
      interval: '1s',
      timeout: '3s',
      now: () => t,
      stalls: { stalledMs: () => 0 },
    });
    hb.touch('a');
    t = 3000;
    expect(hb.sweep()).toEqual([]);
    t = 3001;
    expect(hb.sweep()).toEqual(['a']);
  });
});
