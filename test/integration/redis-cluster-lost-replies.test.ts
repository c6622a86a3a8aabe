// A node batch (one script call for many slots of one master, src/redis/node-batch.ts) whose reply
// is lost after the script ran: the ledger's batch goes again per slot and each entry is answered
// as it ran (its replay mark); an idempotency batch is not run again (a begin run twice would
// answer its own holder `in-progress`): each caller is told `unknown`. Each master sits behind a
// TCP proxy that kills the connection as a script's reply comes back (startCluster `proxied`).
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, StoreError } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import { nodeBatchCounts } from '../../src/redis/node-batch.js';
import { type StartedCluster, startCluster } from '../support/redis-servers.js';

let cluster: StartedCluster;
let client: Cluster;
const prefix = 'nb-lost:';
// Calls made first, untimed: 30 keys over 3 masters reach each of them (a miss: (2/3)^30 < 1e-5).
const WARM = 30;

beforeAll(async () => {
  cluster = await startCluster({ proxied: true });
  // Through the proxies (the announced ports): every command of the client can lose its reply.
  client = new Cluster(
    cluster.nodes.slice(0, 3).map((node) => ({ host: '127.0.0.1', port: node.announced })),
    { redisOptions: { maxRetriesPerRequest: 20 }, retryDelayOnFailover: 20 },
  );
}, 120_000);

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

const loseNextReplies = () => {
  for (const node of cluster.nodes.slice(0, 3)) node.proxy?.loseNextReply();
};

describe('Redis Cluster node batches whose reply was lost', () => {
  it('idempotency: never run twice; each caller told `unknown` (it may have run)', async () => {
    const store = createRedisStore({ client, prefix });
    const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const begin = (key: string, i: number) =>
      store.idempotencyBegin!({ name: 'nb', key, payloadHash: 'h', token: `t${i}`, leaseMs: 60_000 });
    // Every master connected and its scripts cached: a group whose master's connection is not
    // ready yet goes per slot through the Cluster client, which sends a command again itself.
    await Promise.all(keys.slice(0, WARM).map(begin));
    const before = nodeBatchCounts.closed;
    loseNextReplies();
    const answers = await Promise.all(
      keys.slice(WARM).map((key, i) =>
        begin(key, i + WARM).then(
          (reply) => reply.outcome as string,
          (err: unknown) => (err instanceof StoreError ? `error ${err.outcome}` : `thrown ${String(err)}`),
        ),
      ),
    );
    expect(nodeBatchCounts.closed).toBeGreaterThan(before);
    const kinds = new Set(answers);
    // Some callers' node batch lost its reply: told `unknown`; never `in-progress` (a second run).
    expect(kinds.has('error unknown')).toBe(true);
    expect([...kinds].filter((a) => a !== 'acquired' && a !== 'error unknown')).toEqual([]);
  }, 60_000);

  it('ledger: the batch goes again per slot, each entry answered as it ran, booked once', async () => {
    const ledger = createLedger({ store: createRedisStore({ client, prefix }), capacity: 4, name: 'lost' });
    const owners = Array.from({ length: 200 }, (_, i) => `o${i}`);
    await Promise.all(
      owners.slice(0, WARM).map((owner) => ledger.apply({ owner, signature: 'w', deltas: {} })),
    );
    const before = nodeBatchCounts.closed;
    loseNextReplies();
    const results = await Promise.all(
      owners.map((owner) => ledger.apply({ owner, signature: 's1', deltas: { coins: 5 } })),
    );
    expect(nodeBatchCounts.closed).toBeGreaterThan(before);
    expect(results.map((r) => r.outcome)).toEqual(owners.map(() => 'applied'));
    const balances = await Promise.all(owners.map((owner) => ledger.balances(owner)));
    expect(balances).toEqual(owners.map(() => ({ coins: 5n })));
  }, 60_000);
});
