// Each mutant breaks limiterAdjust, or the blocks limiterTake reads, in one way a real store
// could (through wrapStore, on a memory store); the limiter-adjust suite must fail on each, in the
// cases named.
import { describe, expect, it } from 'vitest';
import { memoryStore, type Store } from '../../src/index.js';
import type { LimiterAdjustCommand, LimiterAdjustReply, LimiterTakeReply } from '../../src/store/limiter.js';
import { conformance, wrapStore } from '../../src/testing/index.js';

type Overrides = Parameters<typeof wrapStore>[1];
const adjustOf = (base: Store) => (cmd: LimiterAdjustCommand) => base.limiterAdjust!(cmd);

const mutants: { name: string; make: (base: Store) => Overrides; fails: string[] }[] = [
  {
    name: 'limiterTake ignores blocks (reads no block, sets none)',
    make: (base) => ({
      limiterTake: (cmd) =>
        base.limiterTake!({
          ...cmd,
          limits: cmd.limits.map((call) => ({ ...call, spec: { ...call.spec, blockMs: 0 } })),
        }),
    }),
    fails: ['block-after-refusal', 'block-operation', 'adjust-keeps-what-a-step-back-reads'],
  },
  {
    name: 'limiterTake blocks on a cost the limit can never admit',
    make: (base) => ({
      async limiterTake(cmd) {
        const reply = (await base.limiterTake!(cmd)) as LimiterTakeReply;
        const never = cmd.limits.filter(
          (call, i) =>
            (call.spec.blockMs ?? 0) > 0 && reply.verdicts[i]?.retryAfterMs === Number.POSITIVE_INFINITY,
        );
        for (const call of never) {
          await adjustOf(base)({ ...cmd, limits: [call], op: 'block', durationMs: call.spec.blockMs });
        }
        return reply;
      },
    }),
    fails: ['block-after-refusal'],
  },
  {
    name: 'limiterTake extends a block on every refusal it answers',
    make: (base) => ({
      async limiterTake(cmd) {
        const reply = (await base.limiterTake!(cmd)) as LimiterTakeReply;
        const refused = cmd.limits.filter(
          (call, i) => (call.spec.blockMs ?? 0) > 0 && reply.verdicts[i]?.allowed === false,
        );
        for (const call of refused) {
          await adjustOf(base)({ ...cmd, limits: [call], op: 'block', durationMs: call.spec.blockMs });
        }
        return reply;
      },
    }),
    fails: ['block-after-refusal'],
  },
  {
    name: 'limiterAdjust reward gives nothing back',
    make: (base) => ({
      limiterAdjust: (cmd) => adjustOf(base)(cmd.op === 'reward' ? { ...cmd, op: 'get' } : cmd),
    }),
    // adjust-invalid too: a reward of 1.5 read as a get is answered, not refused.
    fails: [
      'fixed-window-adjust',
      'reward-not-after',
      'gcra-adjust',
      'sliding-log-adjust',
      'sliding-log-large-adjust',
      'sliding-window-adjust',
      'adjust-invalid',
    ],
  },
  {
    name: 'limiterAdjust reward ignores its notAfter',
    make: (base) => ({
      limiterAdjust: (cmd) => adjustOf(base)({ ...cmd, notAfter: undefined }),
    }),
    fails: ['reward-not-after'],
  },
  {
    name: 'limiterAdjust penalty stops at the limit',
    make: (base) => ({
      async limiterAdjust(cmd) {
        if (cmd.op !== 'penalty') return adjustOf(base)(cmd);
        const now = (await adjustOf(base)({ ...cmd, op: 'get' })) as LimiterAdjustReply;
        const room = Math.min(...now.states.map((s) => s.remaining));
        return adjustOf(base)({ ...cmd, points: Math.min(cmd.points ?? 0, Math.max(0, room)) });
      },
    }),
    fails: [
      'fixed-window-adjust',
      'gcra-adjust',
      'sliding-log-adjust',
      'sliding-log-large-adjust',
      'sliding-window-adjust',
      'adjust-invalid',
    ],
  },
  {
    name: 'limiterAdjust penalty charges limit by limit (not all or nothing)',
    make: (base) => ({
      async limiterAdjust(cmd) {
        if (cmd.op !== 'penalty') return adjustOf(base)(cmd);
        let error: unknown;
        for (const call of cmd.limits) {
          await adjustOf(base)({ ...cmd, limits: [call] }).catch((err: unknown) => {
            error = err;
          });
        }
        if (error !== undefined) throw error;
        return adjustOf(base)({ ...cmd, op: 'get' });
      },
    }),
    fails: ['adjust-invalid'],
  },
  {
    name: 'limiterAdjust delete answers the states after it',
    make: (base) => ({
      async limiterAdjust(cmd) {
        if (cmd.op !== 'delete') return adjustOf(base)(cmd);
        await adjustOf(base)(cmd);
        return adjustOf(base)({ ...cmd, op: 'get' });
      },
    }),
    fails: ['get-and-delete', 'block-operation'],
  },
  {
    name: 'limiterAdjust block with 0 leaves the block in place',
    make: (base) => ({
      limiterAdjust: (cmd) =>
        adjustOf(base)(cmd.op === 'block' && cmd.durationMs === 0 ? { ...cmd, op: 'get' } : cmd),
    }),
    fails: ['block-operation'],
  },
  {
    name: 'limiterAdjust set adds to the usage instead of replacing it',
    make: (base) => ({
      limiterAdjust: (cmd) => adjustOf(base)(cmd.op === 'set' ? { ...cmd, op: 'penalty' } : cmd),
    }),
    fails: ['fixed-window-adjust', 'sliding-log-adjust'],
  },
];

describe('the limiter-adjust suite catches one broken operation at a time', () => {
  it('the unbroken memory store passes it', async () => {
    const results = await conformance.run(memoryStore(), { suites: ['limiter-adjust'], require: true });
    expect(results.length).toBeGreaterThan(0);
    expect(results.flatMap((r) => r.failures)).toEqual([]);
  });

  for (const mutant of mutants) {
    it(mutant.name, async () => {
      const base = memoryStore();
      const results = await conformance.run(wrapStore(base, mutant.make(base)), {
        suites: ['limiter-adjust'],
        require: true,
      });
      expect(results.filter((r) => r.failures.length > 0).map((r) => r.name)).toEqual(mutant.fails);
    });
  }
});
