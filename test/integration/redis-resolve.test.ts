import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/ledger/ledger.js';
import { createRedisStore } from '../../src/redis/index.js';
import { ownerKeys } from '../../src/redis/keys.js';
import { RESOLVE_PAGE, resolveEntry, resolveSteps } from '../../src/redis/resolve.js';
import { scripts } from '../../src/redis/scripts.generated.js';
import type { LedgerApplyCommand } from '../../src/store/store.js';
import { resolveScenarios } from '../support/resolve-scenarios.js';
import { cleanupPrefix, clusterClient, REDIS_URL, runPrefix } from './redis-env.js';

for (const mode of ['standalone', 'cluster'] as const) {
  describe(`Ledger.resolve on the Redis store (${mode})`, () => {
    const client = mode === 'cluster' ? clusterClient() : new Redis(REDIS_URL);
    const prefix = runPrefix(`resolve-${mode}`);
    afterAll(async () => {
      await cleanupPrefix(client, prefix);
      client.disconnect();
    });
    const storeWith = (keep?: number) =>
      createRedisStore({ client, prefix, journal: keep === undefined ? {} : { maxEntriesPerOwner: keep } });

    resolveScenarios(storeWith);

    it("retention is per owner: other owners' applies drop nothing of an owner's journal", async () => {
      const ledger = createLedger({ store: storeWith(2), capacity: 1, name: `own-${mode}` });
      await ledger.apply({ owner: 'p1', signature: 'a', deltas: { coins: 1 }, order: 1 });
      await ledger.apply({ owner: 'p1', signature: 'b', deltas: { coins: 1 }, order: 2 });
      for (const n of [1, 2, 3])
        await ledger.apply({ owner: 'p2', signature: `q${n}`, deltas: {}, order: n });
      const late = { owner: 'p1', signature: 'late', deltas: { coins: 1 }, order: 1 };
      expect((await ledger.apply(late)).outcome).toBe('stale');
      expect((await ledger.resolve(late)).outcome).toBe('applied');
      // p2 dropped q1: at or below order 1 it cannot tell.
      expect((await ledger.resolve({ owner: 'p2', signature: 'x', deltas: {}, order: 1 })).outcome).toBe(
        'unknown',
      );
    });

    it('a journal longer than a step reads is read in steps, with applies in between, and decided exactly', async () => {
      const ledger = createLedger({ store: storeWith(), capacity: 1, name: `steps-${mode}` });
      for (let n = 1; n <= 9; n++)
        await ledger.apply({ owner: 'p1', signature: `s${n}`, deltas: { coins: 1 }, order: n });
      const [state, journal] = ownerKeys(prefix, `steps-${mode}`, 'p1');
      const cmd = (signature: string, order: number): LedgerApplyCommand => ({
        ledger: `steps-${mode}`,
        capacity: 1,
        horizon: true,
        owner: 'p1',
        signature,
        deltas: [['coins', 1n]],
        order,
      });
      let steps = 0;
      let applied = 10;
      // Each step reads 2 entries; between steps, another apply lands (read on the way up).
      const step = async <T>(call: () => Promise<T>): Promise<T> => {
        steps++;
        const out = await call();
        if (steps <= 3)
          await ledger.apply({
            owner: 'p1',
            signature: `s${applied}`,
            deltas: { coins: 1 },
            order: applied++,
          });
        return out;
      };
      // s1 is the oldest: found only after reading down the whole journal.
      const dup = await resolveSteps(
        client,
        [state, journal],
        resolveEntry(cmd('s1', 1), undefined),
        '',
        step,
        2,
      );
      expect(dup[0]).toBe('duplicate');
      expect(steps).toBe(5);
      // `up` lands between steps of this one: found on the way up.
      steps = 0;
      let late = false;
      const stepLate = async <T>(call: () => Promise<T>): Promise<T> => {
        steps++;
        const out = await call();
        if (!late) {
          late = true;
          // `up` and one more: `up` is in the journal only, above where the first step began.
          await ledger.apply({ owner: 'p1', signature: 'up', deltas: { coins: 1 }, order: 13 });
          await ledger.apply({ owner: 'p1', signature: 'after', deltas: { coins: 1 }, order: 14 });
        }
        return out;
      };
      expect(
        (
          await resolveSteps(
            client,
            [state, journal],
            resolveEntry(cmd('up', 13), undefined),
            '',
            stepLate,
            3,
          )
        )[0],
      ).toBe('duplicate');
      // 12 entries, 3 a step: 4 steps down (and an empty one), the last one up.
      expect(steps).toBe(5);
      const fresh = await resolveSteps(
        client,
        [state, journal],
        resolveEntry(cmd('new', 0), undefined),
        '',
        (c) => c(),
        2,
      );
      expect(fresh[0]).toBe('applied');
      expect(fresh[1]).toBe('15');
      expect(await ledger.balances('p1')).toEqual({ coins: 15n });
    });

    it('state written before the journal trail was kept: unknown once anything was dropped, decided while nothing was', async () => {
      const name = `legacy-${mode}`;
      const ledger = createLedger({ store: storeWith(2), capacity: 1, name });
      for (let n = 1; n <= 3; n++)
        await ledger.apply({ owner: 'p1', signature: `s${n}`, deltas: { coins: 1 }, order: n });
      for (let n = 1; n <= 2; n++)
        await ledger.apply({ owner: 'p2', signature: `s${n}`, deltas: { coins: 1 }, order: n });
      // What the script before the trail left: no field m, no field p on the entries.
      for (const owner of ['p1', 'p2']) {
        const [state, journal] = ownerKeys(prefix, name, owner);
        await client.hdel(state, 'm');
        const entries = (await client.xrange(journal, '-', '+')) as [string, string[]][];
        await client.del(journal);
        for (const [, fields] of entries) {
          const kept: string[] = [];
          for (let i = 0; i < fields.length; i += 2)
            if (fields[i] !== 'p') kept.push(fields[i] as string, fields[i + 1] as string);
          await client.xadd(journal, '*', ...kept);
        }
      }
      // p1 dropped s1 (the journal holds s2, s3): nothing recorded of what it was.
      expect((await ledger.resolve({ owner: 'p1', signature: 'new', deltas: {}, order: 9 })).outcome).toBe(
        'unknown',
      );
      expect((await ledger.resolve({ owner: 'p1', signature: 's3', deltas: {}, order: 3 })).outcome).toBe(
        'duplicate',
      );
      // p2 dropped nothing (seqs 1, 2 retained): absence proves it.
      expect((await ledger.resolve({ owner: 'p2', signature: 'new', deltas: {}, order: 0 })).outcome).toBe(
        'applied',
      );
      // Its next applies keep no trail either (m was missing): once s1 is dropped, unknown.
      await ledger.apply({ owner: 'p2', signature: 's4', deltas: {}, order: 4 });
      expect((await ledger.resolve({ owner: 'p2', signature: 'later', deltas: {}, order: 5 })).outcome).toBe(
        'unknown',
      );
    });

    it('one script call reads a bounded part of a long journal: the server is never held for the whole of it', async () => {
      const name = `long-${mode}`;
      let calls = 0;
      const counting = {
        isCluster: mode === 'cluster',
        call: (command: string, ...args: (string | number)[]) => {
          if (command === 'EVALSHA' && args[0] === scripts.ledgerResolve.sha1) calls++;
          return client.call(command, ...args);
        },
      };
      const ledger = createLedger({
        store: createRedisStore({ client: counting, prefix }),
        capacity: 1,
        name,
      });
      const total = 3 * RESOLVE_PAGE + 7;
      for (let n = 1; n <= total; n++)
        await ledger.apply({ owner: 'p1', signature: `s${n}`, deltas: {}, order: n });
      // A repeat among the newest: one call.
      expect(
        (await ledger.resolve({ owner: 'p1', signature: `s${total - 3}`, deltas: {}, order: total - 3 }))
          .outcome,
      ).toBe('duplicate');
      expect(calls).toBe(1);
      // The oldest, and a new entry: read through in calls of at most RESOLVE_PAGE entries.
      calls = 0;
      expect((await ledger.resolve({ owner: 'p1', signature: 's1', deltas: {}, order: 1 })).outcome).toBe(
        'duplicate',
      );
      expect(calls).toBe(4);
      calls = 0;
      expect((await ledger.resolve({ owner: 'p1', signature: 'new', deltas: {}, order: 0 })).outcome).toBe(
        'applied',
      );
      expect(calls).toBe(4);
    });

    it('a journal with a gap (an entry booked without one) or without its state proves nothing', async () => {
      const name = `gap-${mode}`;
      const ledger = createLedger({ store: storeWith(), capacity: 1, name });
      // One process keeps no journal: its entry leaves a gap in the others' journal.
      const silent = createLedger({ store: storeWith(0), capacity: 1, name });
      await ledger.apply({ owner: 'p1', signature: 'a', deltas: {}, order: 1 });
      await silent.apply({ owner: 'p1', signature: 'b', deltas: {}, order: 2 });
      expect((await ledger.resolve({ owner: 'p1', signature: 'x', deltas: {}, order: 5 })).outcome).toBe(
        'unknown',
      );
      await ledger.apply({ owner: 'p1', signature: 'c', deltas: {}, order: 3 });
      expect((await ledger.resolve({ owner: 'p1', signature: 'b', deltas: {}, order: 2 })).outcome).toBe(
        'unknown',
      );
      // A journal whose state was lost.
      await ledger.apply({ owner: 'p3', signature: 'a', deltas: {}, order: 1 });
      await client.del(ownerKeys(prefix, name, 'p3')[0]);
      expect((await ledger.resolve({ owner: 'p3', signature: 'z', deltas: {}, order: 0 })).outcome).toBe(
        'unknown',
      );
    });
  });
}
