// Generated request sequences for the limiter property tests: a fake clock that jumps onto
// window and bucket edges (W − 1, W, W + 1, G − 1, G, ...) as often as anywhere else.
import fc from 'fast-check';
import type { Algorithm, LimitOptions } from '../../src/index.js';

export const WINDOW = 1000;
export const GRANULARITY = 250;

export interface Step {
  readonly advance: number;
  readonly cost: number;
  readonly key: string;
}

const edge = fc.constantFrom(
  0,
  1,
  GRANULARITY - 1,
  GRANULARITY,
  GRANULARITY + 1,
  WINDOW - 1,
  WINDOW,
  WINDOW + 1,
);
const advance = fc.oneof(edge, fc.integer({ min: 0, max: 2 * WINDOW }), fc.constant(0));

// A clock that steps back (NTP, a VM restore): a few ms, a bucket, most of a window.
const rollback = fc.constantFrom(-1, -GRANULARITY, -(WINDOW - 1));

/**
 * Request sequences; with `rollbacks`, some steps move the clock back (`advance` < 0: apply it
 * with `clock.set(clock.now() + advance)`).
 */
export const steps = (keys: readonly string[] = ['k'], rollbacks = false): fc.Arbitrary<Step[]> =>
  fc.array(
    fc.record({
      advance: rollbacks
        ? fc.oneof({ arbitrary: advance, weight: 4 }, { arbitrary: rollback, weight: 1 })
        : advance,
      cost: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 1, max: 12 })),
      key: fc.constantFrom(...keys),
    }),
    { minLength: 1, maxLength: 40 },
  );

export const ALGORITHMS: readonly Algorithm[] = ['sliding-log', 'sliding-window', 'fixed-window', 'gcra'];

export function limitOf(
  algorithm: Algorithm,
  limit: number,
  extra: Partial<LimitOptions> = {},
): LimitOptions {
  const base: LimitOptions = { algorithm, limit, window: WINDOW, ...extra };
  return algorithm === 'sliding-window' && extra.granularity === undefined
    ? { ...base, granularity: GRANULARITY }
    : base;
}

/** A limit configuration arbitrary: one algorithm, or a multi-limit mix. */
export const limitSets: fc.Arbitrary<LimitOptions[]> = fc.oneof(
  fc.tuple(fc.constantFrom(...ALGORITHMS), fc.integer({ min: 1, max: 10 })).map(([a, l]) => [limitOf(a, l)]),
  fc
    .tuple(
      fc.constantFrom(...ALGORITHMS),
      fc.integer({ min: 1, max: 10 }),
      fc.constantFrom(...ALGORITHMS),
      fc.integer({ min: 5, max: 30 }),
    )
    .map(([a, l, b, m]) => [
      { ...limitOf(a, l), id: 'short' },
      {
        ...limitOf(b, m, b === 'gcra' ? { burst: Math.max(1, m >> 1) } : {}),
        id: 'long',
        window: 3 * WINDOW,
      },
    ]),
  fc.integer({ min: 1, max: 10 }).map((l) => [limitOf('sliding-window', l, { granularity: WINDOW })]),
);
