// On Redis Cluster a turn's calls of one master go in one call of a script's node variant
// (src/redis/node-batch.ts), and a batch the node variant cannot run whole (a key of a slot moved
// or moving) goes per slot. On a cluster of the test's own: while stable, script calls per apply
// are well below 1 (INFO commandstats of the masters); while slots move under concurrent ledger
// applies (a redis-cli reshard, then the owners' own slots migrated key by key, back and forth: a
// storm of MOVED and ASK), every fresh entry is applied exactly once, every repeat answers
// duplicate, balances and journals are the model's, every key is on the master of its slot, and
// batches did go per slot. The limiter and idempotency answer as the memory store does with
// concurrent calls over many slots.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, type ClusterOptions, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, createLimiter, FakeClock } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { nodeBatchCounts } from '../../src/redis/node-batch.js';
import { keySlot } from '../../src/redis/slot.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { killClients } from '../support/durable-redis.js';
import { type StartedCluster, startCluster } from '../support/redis-servers.js';

const exec = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cluster: StartedCluster;
let admins: Redis[];
let ids: string[];
let client: Cluster;
const prefix = 'nb:';

/** A Cluster client of its own on the three masters. */
const clusterClient = (options: ClusterOptions) =>
  new Cluster(
    cluster.ports.slice(0, 3).map((port) => ({ host: '127.0.0.1', port })),
    options,
  );

beforeAll(async () => {
  cluster = await startCluster();
  const masters = cluster.ports.slice(0, 3);
  admins = masters.map((port) => new Redis(port, '127.0.0.1'));
  ids = (await Promise.all(admins.map((a) => a.call('CLUSTER', 'MYID')))) as string[];
  client = clusterClient({ redisOptions: { maxRetriesPerRequest: 20 } });
}, 120_000);

afterAll(async () => {
  client?.disconnect();
  for (const a of admins ?? []) a.disconnect();
  await cluster?.stop();
});

/** EVALSHA and EVAL calls summed over the masters, since their last CONFIG RESETSTAT. */
async function scriptCalls(): Promise<number> {
  let calls = 0;
  for (const admin of admins) {
    const info = await admin.info('commandstats');
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  }
  return calls;
}

/** The master (index into `admins`) of each slot, as the first master reports it. */
async function slotOwners(): Promise<number[]> {
  return slotOwnersOf(admins[0] as Redis);
}

/** The master (index into `admins`) of each slot, as `admin` reports it. */
async function slotOwnersOf(admin: Redis): Promise<number[]> {
  const owners: number[] = new Array(16384).fill(-1);
  const ranges = (await admin.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
  for (const [from, to, [, port]] of ranges) {
    for (let s = from; s <= to; s++) owners[s] = cluster.ports.indexOf(port);
  }
  return owners;
}

/** What each master says of `owner`'s slot: its owner, and whether it is migrating or importing. */
async function slotReport(owner: string): Promise<string> {
  const slot = keySlot(`{nb:${owner}}`);
  const views: string[] = [];
  for (const [i, admin] of admins.entries()) {
    const nodes = String(await admin.call('CLUSTER', 'NODES'));
    const myself = nodes.split('\n').find((line) => line.includes('myself')) ?? '';
    const marks = myself.match(new RegExp(`\\[${slot}-[<>]-[0-9a-f]+\\]`, 'g')) ?? [];
    const owners = await slotOwnersOf(admin);
    views.push(`master ${i}: owner ${owners[slot]} ${marks.join(' ')}`);
  }
  return `slot ${slot}: ${views.join('; ')}`;
}

/** Every key of one node that matches `pattern`. */
async function scanAll(node: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  return keys;
}

/**
 * Waits until every master has heard every master's config epoch, and no two masters share one.
 * A slot's new owner claims it with an epoch bumped past the highest it knows of
 * (`CLUSTER SETSLOT NODE` on the importing master); one that has not yet heard the old owner's
 * latest epoch can bump to an equal or lower one, and the old owner's next heartbeat, still
 * claiming the slot, then wins it back: the new owner gives the slot up and deletes its keys
 * (Redis's dirty-slot rule), which loses what was moved there. Settled epochs rule that out.
 */
async function epochsSettled(): Promise<void> {
  const until = performance.now() + 20_000;
  for (;;) {
    const views = await Promise.all(
      admins.map(async (admin) => {
        const nodes = String(await admin.call('CLUSTER', 'NODES'));
        const epochs = nodes
          .split('\n')
          .filter((line) => line.includes('master'))
          .map((line) => line.split(' '))
          .map(([id, , , , , , epoch]) => `${id}=${epoch}`)
          .sort();
        return epochs.join(' ');
      }),
    );
    const epochs = (views[0] ?? '').split(' ').map((e) => e.split('=')[1]);
    if (views.every((v) => v === views[0]) && new Set(epochs).size === epochs.length) return;
    if (performance.now() > until)
      throw new Error(`config epochs not settled after 20 s: ${views.join(' | ')}`);
    await sleep(50);
  }
}

/** Moves `slot` from master `from` to master `to` as redis-cli does, a key at a time, slowly. */
async function moveSlot(slot: number, from: number, to: number): Promise<void> {
  const [source, target] = [admins[from] as Redis, admins[to] as Redis];
  await epochsSettled();
  await target.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', ids[from] as string);
  await source.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', ids[to] as string);
  for (;;) {
    const keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', slot, 1)) as string[];
    if (keys.length === 0) break;
    await source.call('MIGRATE', '127.0.0.1', cluster.ports[to] as number, '', 0, 5000, 'KEYS', ...keys);
    // A slot half moved for a while: its owners' keys on two masters (ASK, TRYAGAIN).
    await sleep(3);
  }
  await target.call('CLUSTER', 'SETSLOT', slot, 'NODE', ids[to] as string);
  await source.call('CLUSTER', 'SETSLOT', slot, 'NODE', ids[to] as string);
  for (const admin of admins)
    if (admin !== source && admin !== target)
      await admin.call('CLUSTER', 'SETSLOT', slot, 'NODE', ids[to] as string);
  // Gossip is not instant: as `redis-cli --cluster fix` does, every master that does not yet see
  // the new owner is told again until all agree.
  const until = performance.now() + 10_000;
  for (;;) {
    const views = await Promise.all(admins.map(async (a) => (await slotOwnersOf(a))[slot]));
    if (views.every((v) => v === to)) return;
    if (performance.now() > until)
      throw new Error(`slot ${slot}: masters still see owners ${views} after 10 s`);
    for (const [i, admin] of admins.entries())
      if (views[i] !== to) await admin.call('CLUSTER', 'SETSLOT', slot, 'NODE', ids[to] as string);
    await sleep(50);
  }
}

describe('Redis Cluster node batches', () => {
  const OWNERS = 240;
  const owners = Array.from({ length: OWNERS }, (_, i) => `o${i}`);
  // Per owner: how many fresh entries it was given (entry k books k + 1 coins, signature f<k>).
  const fresh = new Map<string, number>(owners.map((o) => [o, 0]));
  const failures: string[] = [];
  const store = () => createRedisStore({ client, prefix });
  const ledger = (on: Cluster = client, name = 'nb') =>
    createLedger({ store: createRedisStore({ client: on, prefix }), capacity: 8, name });

  /**
   * Rounds of each owner's next fresh entry and, in the same turn, a repeat of its previous one
   * (the batcher sends it in a later batch: the owner's calls stay in call order), until `more()`
   * says stop. A call the store fails (`unknown`, retriable) is sent again, as a caller would.
   */
  async function drive(l: ReturnType<typeof ledger>, more: () => boolean): Promise<number> {
    failures.length = 0; // each test reports its own
    let applies = 0;
    const apply = async (owner: string, k: number) => {
      // A caller's patience: a slot in the middle of a move answers TRYAGAIN or bounces between
      // masters until every master has been told its new owner, which on a loaded machine can
      // take seconds; a slot still unusable after 30 s is broken, and the failure says how.
      const giveUp = performance.now() + 30_000;
      for (let attempt = 0; ; attempt++) {
        try {
          applies++;
          return (await l.apply({ owner, signature: `f${k}`, deltas: { coins: k + 1 } })).outcome;
        } catch (err) {
          if (performance.now() > giveUp)
            throw new Error(`${owner} f${k}: ${await slotReport(owner)}`, { cause: err });
          await sleep(Math.min(1000, 50 * 2 ** Math.min(attempt, 5)));
        }
      }
    };
    await Promise.all(
      owners.map(async (owner) => {
        while (more()) {
          const k = fresh.get(owner) as number;
          fresh.set(owner, k + 1);
          const [first, repeat] = await Promise.all([
            apply(owner, k),
            k > 0 ? apply(owner, k - 1) : 'duplicate',
          ]);
          // A retried fresh entry may find its own first attempt: 'duplicate' is then right.
          if (first !== 'applied' && first !== 'duplicate') failures.push(`${owner} f${k}: ${first}`);
          if (repeat !== 'duplicate') failures.push(`${owner} repeat f${k - 1}: ${repeat}`);
        }
      }),
    );
    return applies;
  }

  it('stable: one script call per master and turn, far below one per apply', async () => {
    const l = ledger();
    let rounds = 0;
    await drive(l, () => rounds++ < OWNERS); // one round: registers the owners, loads the scripts
    for (const admin of admins) await admin.call('CONFIG', 'RESETSTAT');
    const before = nodeBatchCounts.node;
    rounds = 0;
    const applies = await drive(l, () => rounds++ < 10 * OWNERS);
    const perApply = (await scriptCalls()) / applies;
    expect(nodeBatchCounts.node).toBeGreaterThan(before);
    // 240 owners over 3 masters: per-slot batches would be ~1 call per apply.
    expect(perApply).toBeLessThan(0.5);
  });

  /** The model: owner o's entries f0 .. f<n-1>, each once, k + 1 coins each. */
  async function expectModel(l: ReturnType<typeof ledger>): Promise<void> {
    for (const owner of owners) {
      const n = fresh.get(owner) as number;
      expect(await l.balances(owner)).toEqual(n === 0 ? {} : { coins: BigInt((n * (n + 1)) / 2) });
      const journal = await l.journal({ owner });
      expect(journal.map((e) => e.signature)).toEqual(Array.from({ length: n }, (_, k) => `f${k}`));
    }
  }

  it("while slots move (reshard, then a MOVED/ASK storm on the owners' slots): exactly once, as the model", async () => {
    const l = ledger();
    const fallbacks = nodeBatchCounts.perSlot;
    let moving = true;
    const driving = drive(l, () => moving);
    try {
      // A live reshard of 1000 slots from the first master to the second.
      await exec('redis-cli', [
        '--cluster',
        'reshard',
        `127.0.0.1:${cluster.ports[0]}`,
        '--cluster-from',
        ids[0] as string,
        '--cluster-to',
        ids[1] as string,
        '--cluster-slots',
        '1000',
        '--cluster-yes',
      ]);
      // The owners' own slots, each moved to the next master and on, three times.
      const used = [...new Set(owners.map((o) => keySlot(`{nb:${o}}`)))].slice(0, 40);
      for (let round = 0; round < 3; round++) {
        const where = await slotOwners();
        for (const slot of used) {
          const from = where[slot] as number;
          await moveSlot(slot, from, (from + 1) % 3);
        }
      }
      // Every master agrees on every slot's owner before the applies stop (and the next test starts).
      const agreed = performance.now() + 30_000;
      for (;;) {
        const views = await Promise.all(admins.map((a) => slotOwnersOf(a)));
        if (views.every((v) => v.join() === views[0]?.join())) break;
        if (performance.now() > agreed)
          throw new Error('the masters still disagree on slot owners after 30 s');
        await sleep(100);
      }
    } catch (err) {
      // The slot moves' own failure is the one to report, not what it left the applies with.
      moving = false;
      await driving.catch(() => {});
      throw err;
    }
    moving = false;
    await driving;
    expect(failures).toEqual([]);
    expect(nodeBatchCounts.perSlot).toBeGreaterThan(fallbacks);
    await expectModel(l);

    // Every key on the master of its slot, and on no other.
    const where = await slotOwners();
    let keys = 0;
    for (const [i, admin] of admins.entries()) {
      for (const key of await scanAll(admin, `${prefix}*`)) {
        keys++;
        expect({ key, on: i }).toEqual({ key, on: where[keySlot(key)] });
      }
    }
    expect(keys).toBeGreaterThan(2 * OWNERS);
  }, 240_000);

  it('connections killed with node batches in flight: sent again per slot, still exactly once', async () => {
    const killed = clusterClient({
      redisOptions: { connectionName: 'nb-killed', maxRetriesPerRequest: 20 },
      retryDelayOnFailover: 20,
    });
    try {
      const l = ledger(killed);
      const before = nodeBatchCounts.closed;
      let running = true;
      const driving = drive(l, () => running);
      try {
        // Until a node batch was in flight when its connection died (each kill has a fair chance;
        // the bound only keeps a broken build from looping for ever).
        const until = Date.now() + 60_000;
        while (nodeBatchCounts.closed === before && Date.now() < until) {
          await sleep(40);
          for (const admin of admins) await killClients(admin, 'nb-killed');
        }
        await sleep(200);
      } finally {
        running = false;
        await driving;
      }
      expect(nodeBatchCounts.closed).toBeGreaterThan(before);
      expect(failures).toEqual([]);
      await expectModel(l);
    } finally {
      killed.disconnect();
    }
  }, 120_000);

  it("a client's keyPrefix (the Cluster's own, or its nodes'): node batches write the prefixed keys", async () => {
    for (const [name, options] of [
      ['kp1:', { keyPrefix: 'kp1:' }],
      ['kp2:', { redisOptions: { keyPrefix: 'kp2:' } }],
    ] as const) {
      const prefixed = clusterClient(options);
      try {
        const l = ledger(prefixed, 'kp');
        const before = nodeBatchCounts.node;
        for (let round = 0; round < 3; round++) {
          const outcomes = await Promise.all(
            owners.map((owner) => l.apply({ owner, signature: `s${round}`, deltas: { coins: 1 } })),
          );
          expect(outcomes.every((o) => o.outcome === 'applied')).toBe(true);
        }
        expect(nodeBatchCounts.node).toBeGreaterThan(before);
        expect(await l.balances('o7')).toEqual({ coins: 3n });
        const where = await slotOwners();
        let found = 0;
        for (const [i, admin] of admins.entries()) {
          const keys = await scanAll(admin, `${name}${prefix}{kp:*`);
          for (const key of keys) expect({ key, on: i }).toEqual({ key, on: where[keySlot(key)] });
          found += keys.length;
        }
        expect(found).toBe(2 * OWNERS); // per owner, its state hash and its journal stream
      } finally {
        prefixed.disconnect();
      }
    }
  });

  it('durability: each node batch is followed by its own WAIT on that master', async () => {
    const shortfalls: number[] = [];
    const durable = createRedisStore({
      client,
      prefix,
      // No replicas in this cluster: every wait falls short, and reports how many calls it covered.
      durability: { replicas: 1, timeout: '20ms', onShort: (s) => shortfalls.push(s.calls) },
    });
    const l = createLedger({ store: durable, capacity: 8, name: 'dur' });
    await Promise.all(owners.map((owner) => l.apply({ owner, signature: 'w', deltas: { coins: 1 } })));
    const before = nodeBatchCounts.node;
    const outcomes = await Promise.all(
      owners.map((owner) => l.apply({ owner, signature: 'x', deltas: { coins: 1 } })),
    );
    expect(outcomes.every((o) => o.outcome === 'applied')).toBe(true);
    expect(nodeBatchCounts.node).toBeGreaterThan(before);
    // Every apply covered by a wait, and a wait covering the calls of many slots.
    expect(shortfalls.reduce((a, b) => a + b, 0)).toBe(2 * OWNERS);
    expect(Math.max(...shortfalls)).toBeGreaterThan(10);
  });

  it('maxmemory reached: the node variant (a script with flags) is refused whole, and each entry answers as per slot', async () => {
    const redis = store();
    const keys = Array.from({ length: 60 }, (_, i) => `oom${i}`);
    const begin = (key: string, token: string) =>
      redis.idempotencyBegin!({ name: 'nb', key, payloadHash: '', token, leaseMs: 60_000 });
    const held = await Promise.all(keys.map((key, i) => begin(key, `t${i}`)));
    expect(held.every((r) => r.outcome === 'acquired')).toBe(true);
    const before = nodeBatchCounts.perSlot;
    for (const admin of admins) await admin.config('SET', 'maxmemory', '1');
    try {
      // In one turn: a begin (a write that grows memory: refused) and a release (a DEL: allowed).
      const answers = await Promise.allSettled(
        keys.flatMap((key, i) => [begin(`${key}:new`, 'x'), redis.idempotencyRelease!('nb', key, `t${i}`)]),
      );
      const begins = answers.filter((_, j) => j % 2 === 0);
      const releases = answers.filter((_, j) => j % 2 === 1);
      for (const b of begins) expect(b).toMatchObject({ status: 'rejected', reason: { code: 'ERR_STORE' } });
      expect((begins[0] as PromiseRejectedResult).reason.cause.message).toMatch(/^OOM/);
      for (const r of releases) expect(r).toEqual({ status: 'fulfilled', value: true });
    } finally {
      for (const admin of admins) await admin.config('SET', 'maxmemory', '0');
    }
    expect(nodeBatchCounts.perSlot).toBeGreaterThan(before);
  });

  it('the limiter answers as the memory store, concurrent takes over many slots', async () => {
    const clock = new FakeClock(1_000_000);
    const spec = { algorithm: 'sliding-window', limit: 3, window: '1s', blockCache: false } as const;
    const onRedis = createLimiter({ store: store(), clock, name: 'nb-limit', ...spec });
    const onMemory = createLimiter({ store: memoryStore(), clock, name: 'nb-limit', ...spec });
    const keys = Array.from({ length: 300 }, (_, i) => `u${i}`);
    const before = nodeBatchCounts.node;
    for (let step = 0; step < 8; step++) {
      const [redis, memory] = await Promise.all([
        Promise.all(keys.map((key, i) => onRedis.take(key, { cost: 1 + (i % 2) }))),
        Promise.all(keys.map((key, i) => onMemory.take(key, { cost: 1 + (i % 2) }))),
      ]);
      expect(redis).toEqual(memory);
      clock.advance(150);
    }
    expect(nodeBatchCounts.node).toBeGreaterThan(before);
  });

  it('idempotency answers as the memory store, concurrent calls over many slots', async () => {
    const redis = store();
    const memory: Store = memoryStore();
    const keys = Array.from({ length: 300 }, (_, i) => `r${i}`);
    const before = nodeBatchCounts.node;
    const shape = (reply: unknown) => {
      if (typeof reply !== 'object' || reply === null) return reply;
      const { now: _n, leaseExpiresAt: _l, retryAfterMs: _r, ...rest } = reply as Record<string, unknown>;
      return rest;
    };
    const both = async (call: (s: Store, key: string, i: number) => Promise<unknown>) => {
      const [a, b] = await Promise.all(
        [redis, memory].map((s) => Promise.all(keys.map((key, i) => call(s, key, i)))),
      );
      expect((a as unknown[]).map(shape)).toEqual((b as unknown[]).map(shape));
    };
    const begin = (s: Store, key: string, token: string) =>
      s.idempotencyBegin!({ name: 'nb', key, payloadHash: 'h', token, leaseMs: 60_000 });
    await both((s, key, i) => begin(s, key, `t${i}`));
    await both((s, key, i) => begin(s, key, `other${i}`)); // in progress
    await both((s, key, i) =>
      i % 3 === 0
        ? s.idempotencyRelease!('nb', key, `t${i}`)
        : s.idempotencyComplete!('nb', key, `t${i}`, `v${i}`, 60_000),
    );
    await both((s, key, i) => begin(s, key, `late${i}`)); // completed, or acquired after a release
    expect(nodeBatchCounts.node).toBeGreaterThan(before);
  });
});
