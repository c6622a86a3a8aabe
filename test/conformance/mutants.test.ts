// Each mutant breaks one store operation (through wrapStore, on a memory store) in one way a
// real store could get it wrong; the kit must fail on each. A mutant the kit passes is a rule the
// kit does not check.
import { describe, expect, it } from 'vitest';
import { memoryStore, type Store, StoreError } from '../../src/index.js';
import type { LimiterTakeCommand, LimiterTakeReply } from '../../src/store/limiter.js';
import { compareIntStrings } from '../../src/store/ordering.js';
import { conformance, type SuiteName, wrapStore } from '../../src/testing/index.js';

type Overrides = Parameters<typeof wrapStore>[1];
const tick = () => new Promise((r) => setTimeout(r, 1));

/** A mutant: which suite must catch it, and the overrides over a fresh memory store. */
const mutants: { name: string; suite: SuiteName; make: (base: Store) => Overrides }[] = [
  {
    name: 'limiterTake charges what was left when it refuses',
    suite: 'limiter',
    make: (base) => ({
      async limiterTake(cmd) {
        const reply = (await base.limiterTake!(cmd)) as LimiterTakeReply;
        if (!reply.allowed && cmd.limits.length === 1 && cmd.cost > 0) {
          const left = reply.verdicts[0]?.remaining ?? 0;
          if (left > 0) await base.limiterTake!({ ...cmd, cost: Math.min(left, cmd.cost) });
        }
        return reply;
      },
    }),
  },
  {
    name: 'limiterTake charges the limits that admitted when another refused (not all-or-nothing)',
    suite: 'limiter',
    make: (base) => ({
      async limiterTake(cmd) {
        const reply = (await base.limiterTake!(cmd)) as LimiterTakeReply;
        if (!reply.allowed) {
          for (const [i, verdict] of reply.verdicts.entries()) {
            if (verdict.allowed) await base.limiterTake!({ ...cmd, limits: [cmd.limits[i]!] });
          }
        }
        return reply;
      },
    }),
  },
  {
    name: 'limiterTake ignores the last limit of a multi-limit take',
    suite: 'limiter',
    make: (base) => ({
      async limiterTake(cmd) {
        if (cmd.limits.length < 2) return base.limiterTake!(cmd);
        const reply = (await base.limiterTake!({
          ...cmd,
          limits: cmd.limits.slice(0, -1),
        })) as LimiterTakeReply;
        const last = cmd.limits.at(-1)!.spec;
        const free = { allowed: true, remaining: last.limit, resetAt: reply.now, retryAfterMs: 0 };
        return { ...reply, verdicts: [...reply.verdicts, free] } as LimiterTakeReply;
      },
    }),
  },
  {
    name: 'limiterTake decides 1 ms early (off by one at the window edge)',
    suite: 'limiter',
    make: (base) => ({
      async limiterTake(cmd) {
        if (cmd.now === undefined || cmd.now < 1) return base.limiterTake!(cmd);
        const reply = (await base.limiterTake!({ ...cmd, now: cmd.now - 1 })) as LimiterTakeReply;
        return { ...reply, now: cmd.now };
      },
    }),
  },
  {
    name: 'limiterTake answers a wait 1 ms too long',
    suite: 'limiter',
    make: (base) => ({
      async limiterTake(cmd) {
        const reply = (await base.limiterTake!(cmd)) as LimiterTakeReply;
        return {
          ...reply,
          verdicts: reply.verdicts.map((v) =>
            v.retryAfterMs > 0 ? { ...v, retryAfterMs: v.retryAfterMs + 1 } : v,
          ),
        } as LimiterTakeReply;
      },
    }),
  },
  {
    name: 'limiterTake clamps a malformed cost instead of rejecting it',
    suite: 'limiter',
    make: (base) => ({
      limiterTake: (cmd: LimiterTakeCommand) =>
        base.limiterTake!({ ...cmd, cost: Number.isSafeInteger(cmd.cost) && cmd.cost >= 0 ? cmd.cost : 1 }),
    }),
  },
  {
    name: 'limiterTake throws synchronously on a malformed command',
    suite: 'limiter',
    make: (base) => ({
      limiterTake(cmd: LimiterTakeCommand) {
        if (!Number.isSafeInteger(cmd.cost)) throw new TypeError('bad cost');
        return base.limiterTake!(cmd);
      },
    }),
  },
  {
    name: 'limiterTake ignores the time in the command (decides on its own clock)',
    suite: 'limiter',
    make: (base) => ({
      limiterTake: (cmd: LimiterTakeCommand) => base.limiterTake!({ ...cmd, now: undefined }),
    }),
  },
  {
    name: 'limiterDelete deletes nothing',
    suite: 'limiter-state',
    make: () => ({ limiterDelete: async () => 0 }),
  },
  {
    name: 'limiterReset removes nothing but reports a count',
    suite: 'limiter-state',
    make: (base) => ({
      limiterReset: async (namespace) => {
        await base.limiterReset!(`${namespace}-none`);
        return 4;
      },
    }),
  },
  {
    name: 'limiterTake answers while the store is unreachable (a made-up allow)',
    suite: 'limiter-outage',
    make: (base) => ({
      async limiterTake(cmd) {
        if (!outageState.down) return base.limiterTake!(cmd);
        const verdicts = cmd.limits.map((l) => ({
          allowed: true,
          remaining: l.spec.limit,
          resetAt: 0,
          retryAfterMs: 0,
        }));
        return { now: cmd.now ?? 0, allowed: true, verdicts } as LimiterTakeReply;
      },
    }),
  },
  {
    name: 'limiterTake charges a take that failed, once the store is back (an offline queue replayed)',
    suite: 'limiter-outage',
    make: (base) => {
      const queued: LimiterTakeCommand[] = [];
      return {
        async limiterTake(cmd) {
          if (outageState.down) {
            queued.push(cmd);
            throw new StoreError('limiterTake', new Error('unreachable'));
          }
          for (const q of queued.splice(0)) await base.limiterTake!(q);
          return base.limiterTake!(cmd);
        },
      };
    },
  },
  {
    name: 'versionUpsert accepts an equal version',
    suite: 'version-gate',
    make: () => gateOverrides((c) => c >= 0),
  },
  {
    name: 'versionUpsert compares versions as text',
    suite: 'version-gate',
    make: () => gateOverrides((_c, version, stored) => version > stored),
  },
  {
    name: 'versionUpsert reads, then writes in a second step (not atomic)',
    suite: 'version-gate',
    make: () => gateOverrides((c) => c > 0, true),
  },
  {
    name: 'checkpointSave accepts an older revision',
    suite: 'checkpoint',
    make: () => {
      const saved = new Map<string, { revision: number; data: string }>();
      return {
        async checkpointSave(name, revision, data) {
          const stored = saved.get(name);
          if (stored !== undefined && revision === stored.revision && data !== stored.data) return 'stale';
          saved.set(name, { revision, data });
          return 'saved';
        },
        checkpointLoad: async (name) => saved.get(name),
      };
    },
  },
  {
    name: 'checkpointSave saves every run of the same revision',
    suite: 'checkpoint',
    make: () => {
      const saved = new Map<string, { revision: number; data: string }>();
      return {
        async checkpointSave(name, revision, data) {
          const stored = saved.get(name);
          if (stored !== undefined && revision < stored.revision) return 'stale';
          saved.set(name, { revision, data });
          return 'saved';
        },
        checkpointLoad: async (name) => saved.get(name),
      };
    },
  },
  {
    name: 'leaseRenew always grants a takeover',
    suite: 'snowflake-clock',
    make: () => leaseOverrides((stored, run, takeover) => stored.run === run || takeover !== undefined),
  },
  {
    name: 'leaseRenew lets a second live run renew',
    suite: 'snowflake-clock',
    make: () => leaseOverrides(() => true),
  },
  {
    name: 'leaseRenew lowers the lease',
    suite: 'snowflake-clock',
    make: () =>
      leaseOverrides(
        (stored, run, takeover) => stored.run === run || (takeover !== undefined && stored.ms <= takeover),
        true,
      ),
  },
  {
    name: 'timestampAdvance lowers the timestamp',
    suite: 'snowflake-clock',
    make: (base) => {
      const last = new Map<string, number>();
      return {
        async timestampAdvance(name, ms) {
          if (ms < 0) return last.get(name) ?? base.timestampAdvance!(name, ms);
          last.set(name, ms);
          return ms;
        },
      };
    },
  },
];

/** Whether the stores of the outage mutants are cut off: the kit's outage hook sets it. */
const outageState = { down: false };

/** A version gate that applies when `applies(compare, version, stored)` says so. */
function gateOverrides(
  applies: (c: number, version: string, stored: string) => boolean,
  twoSteps = false,
): Overrides {
  const gates = new Map<string, { version: string; value: string }>();
  return {
    async versionUpsert(gate, key, version, value) {
      const id = `${gate}\n${key}`;
      const stored = gates.get(id);
      // A read, then the write in a second round trip: racing writers all read the same.
      if (twoSteps) await tick();
      if (
        stored !== undefined &&
        !applies(compareIntStrings(version, stored.version), version, stored.version)
      ) {
        return { outcome: version === stored.version ? 'duplicate' : 'stale', version: stored.version };
      }
      gates.set(id, { version, value });
      return { outcome: 'applied', version };
    },
    versionGet: async (gate, key) => gates.get(`${gate}\n${key}`),
  };
}

/** A lease store whose renewal is held when `held(stored, run, takeover)` says so. */
function leaseOverrides(
  held: (stored: { ms: number; run: string }, run: string, takeover: number | undefined) => boolean,
  lowers = false,
): Overrides {
  const leases = new Map<string, { ms: number; run: string }>();
  return {
    async leaseRenew(name, run, ms, takeover) {
      const stored = leases.get(name) ?? { ms: -1, run: '' };
      if (!held(stored, run, takeover)) return { held: false, ms: stored.ms };
      const kept = lowers ? ms : Math.max(stored.ms, ms);
      leases.set(name, { ms: kept, run });
      return { held: true, ms: kept };
    },
    async timestampAdvance(name, ms) {
      const stored = leases.get(name)?.ms ?? -1;
      if (ms <= stored) return stored;
      leases.set(name, { ms, run: '' });
      return ms;
    },
  };
}

describe('the conformance kit catches one broken store operation at a time', () => {
  it('the unbroken memory store passes every suite the mutants are run on', async () => {
    const base = memoryStore();
    // Cut off as a store that cannot reach its server is: every take fails with a StoreError.
    const store = wrapStore(base, {
      limiterTake: (cmd) =>
        outageState.down
          ? Promise.reject(new StoreError('limiterTake', new Error('unreachable')))
          : base.limiterTake!(cmd),
    });
    const outage = {
      begin: () => void (outageState.down = true),
      end: () => void (outageState.down = false),
    };
    const retention = (n: number) => memoryStore({ journal: { maxEntries: n } });
    const results = await conformance.run(store, { outage, retention, require: true });
    expect(results.flatMap((r) => r.failures)).toEqual([]);
  });

  for (const mutant of mutants) {
    it(`${mutant.suite}: ${mutant.name}`, async () => {
      const base = memoryStore();
      const store = wrapStore(base, mutant.make(base));
      const outage = {
        begin: () => void (outageState.down = true),
        end: () => void (outageState.down = false),
      };
      const results = await conformance.run(store, { suites: [mutant.suite], outage, require: true });
      outageState.down = false;
      const failed = results.filter((r) => r.failures.length > 0);
      if (process.env.SHOW_MUTANTS)
        console.log(
          mutant.name,
          '->',
          failed.map((r) => `${r.name}: ${r.failures[0]}`),
        );
      expect(failed.length, `no case of ${mutant.suite} failed`).toBeGreaterThan(0);
    });
  }
});
