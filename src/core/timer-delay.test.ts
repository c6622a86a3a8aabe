// Every duration that feeds a timer is bounded with a typed error or clamped (Node clamps a delay
// above 2^31 - 1 ms to 1 ms, so an unbounded one would fire at once): the helpers, then an audit
// of every timer of the core (a new one fails it until it goes through timerDelay or is listed
// with its bound), then the long-duration case of every option that feeds one.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createCompensator,
  createIdempotency,
  createLimiter,
  createReorderer,
  type GapRange,
  idempotent,
} from '../index.js';
import { MAX_TIMER_MS, timerDelay, timerDuration } from './timer-delay.js';

const DAY = 86_400_000;
const src = fileURLToPath(new URL('..', import.meta.url));

describe('timerDelay / timerDuration', () => {
  it('timerDelay clamps to [0, 2^31 - 1]; timerDuration refuses above it by name', () => {
    expect([timerDelay(-5), timerDelay(10), timerDelay(30 * DAY)]).toEqual([0, 10, MAX_TIMER_MS]);
    expect(timerDuration('timeout', '1s')).toBe(1000);
    expect(timerDuration('timeout', MAX_TIMER_MS)).toBe(MAX_TIMER_MS);
    expect(() => timerDuration('timeout', '30d')).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', option: 'timeout' }),
    );
  });
});

// The timers of the core and how each one's delay is bounded. A timer call whose statement does
// not go through timerDelay must be listed here with the reason its delay is bounded.
const BOUNDED_UPSTREAM: Record<string, { calls: number; why: string }> = {
  'limiter/take-helpers.ts': { calls: 1, why: "the store timeout: timerDuration('timeout')" },
  'limiter/local-first.ts': {
    calls: 1,
    why: "the sweep: every lease period (timerDuration('localFirst.lease')), at least 100 ms",
  },
  'idempotency/lease-renewer.ts': { calls: 1, why: "a third or sixth of timerDuration('lease')" },
  'idempotency/idempotency.ts': { calls: 1, why: 'a poll: at most POLL_MAX_MS (1 s) and the wait budget' },
  'ordering/compensator.ts': { calls: 1, why: 'a retry: timerDelay of the jittered backoff, a line above' },
  'ordering/snowflake-lease.ts': {
    calls: 1,
    why: 'the idle renewal: timerDelay of half the lease, after its callback',
  },
};
const AUDITED_DIRS = [
  'core',
  'ledger',
  'limiter',
  'idempotency',
  'ordering',
  'windows',
  'store',
  'signature',
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sourceFiles(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

describe('every timer of the core is audited', () => {
  it('each setTimeout/setInterval goes through timerDelay, or is listed with its bound', () => {
    const found: Record<string, number> = {};
    for (const dir of AUDITED_DIRS) {
      for (const file of sourceFiles(join(src, dir))) {
        // Code only: TSDoc examples and comments may show timers of their own.
        const code = readFileSync(file, 'utf8')
          .split('\n')
          .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line))
          .join('\n');
        // A call's statement: from the call to its end (the delay may sit on a later line).
        for (const m of code.matchAll(/\bset(?:Timeout|Interval)\(([^;]*)/g)) {
          if (m[1]?.includes('timerDelay(')) continue;
          const name = relative(src, file);
          found[name] = (found[name] ?? 0) + 1;
        }
      }
    }
    expect(found).toEqual(Object.fromEntries(Object.entries(BOUNDED_UPSTREAM).map(([f, b]) => [f, b.calls])));
  });
});

describe("a duration of '30d' that feeds a timer is refused by name, or waited out in clamped steps", () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it.each([
    [
      'createLimiter timeout',
      () => createLimiter({ algorithm: 'gcra', limit: 1, window: '1s', timeout: '30d' }),
      'timeout',
    ],
    ['createIdempotency lease', () => createIdempotency({ lease: '30d' }), 'lease'],
    ['idempotent wait', () => idempotent(() => 1, { key: () => 'k', wait: '30d' }), 'wait'],
    [
      'createCompensator backoff.initial',
      () => createCompensator({ request: async () => {}, backoff: { initial: '30d' } }),
      'backoff.initial',
    ],
    [
      'createCompensator backoff.max',
      () => createCompensator({ request: async () => {}, backoff: { max: '30d' } }),
      'backoff.max',
    ],
  ])('%s: ERR_INVALID_OPTION', (_what, make, option) => {
    expect(make).toThrow(expect.objectContaining({ code: 'ERR_INVALID_OPTION', option }));
  });

  it('idempotency.run wait: ERR_INVALID_ARGUMENT, nothing run', async () => {
    let runs = 0;
    const err = await createIdempotency()
      .run({ key: 'k' }, () => runs++, { wait: '30d' })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path: 'wait' });
    expect(runs).toBe(0);
  });

  it("an adaptive gap timeout clamped at '30d' waits in timer steps of at most 2^31 - 1 ms", async () => {
    vi.useFakeTimers();
    const spy = vi.spyOn(globalThis, 'setTimeout');
    // The wall clock, faked with the timers: each firing sees the time it was set for.
    const clock = { now: () => Date.now() };
    const gaps: GapRange[] = [];
    const r = await createReorderer<string>({
      next: 1,
      capacity: 16,
      gapTimeout: 'adaptive',
      adaptive: { min: '30d', max: '30d', initial: '30d' },
      clock,
      onRelease: () => {},
      onGap: (g) => void gaps.push(g),
    });
    r.push(3, 'c');
    // A busy loop would fire thousands of times here (and fake timers abort after 10 000).
    await vi.advanceTimersByTimeAsync(30 * DAY - 1);
    expect(gaps).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(gaps).toEqual([{ from: 1, to: 2 }]);
    const delays = spy.mock.calls.map((call) => Number(call[1]));
    expect(Math.max(...delays)).toBeLessThanOrEqual(MAX_TIMER_MS);
    expect(delays.length).toBeLessThan(10);
    await r.close();
  }, 30_000); // a few ms when clamped; a busy loop in fake time runs until this ends it
});
