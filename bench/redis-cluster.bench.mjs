// Ledger apply on a 3-master Redis Cluster next to one Redis master, the same workload from the
// same number of client processes: the question is whether moving to a cluster costs throughput
// (it should not: the cluster has more servers) and whether the server time per apply stays what
// one master spends (the figure that says it scales with cores). The suite starts its own servers
// (one standalone, one 3-master cluster without replicas) on free ports and removes them at the end.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { defineSignature } from '../dist/index.js';
import { startCluster, startRedis } from '../dist/testing/index.js';
import { commandStats } from './lib/redis.mjs';
import { clusterWorkload, SETTLEMENT_FIELDS } from './lib/workload.mjs';

// 3 client processes: one per cluster master, the smallest count where every master can be
// kept busy by a client of its own (on this 2-core machine they all share the cores anyway).
const PROCESSES = 3;
// 64 calls in flight per process (192 in all, about the redis-ledger suite's 200): more than a
// turn's worth of applies per node, so batching across slots has something to group.
const LANES = 64;
const WORKER = fileURLToPath(new URL('./lib/cluster-worker.mjs', import.meta.url));

const settlement = defineSignature(SETTLEMENT_FIELDS);
const prefix = `bench-cluster:${process.pid}:`;
let runs = 0;

/** Sends `msg` to a worker; resolves to its answer. */
function ask(worker, msg) {
  return new Promise((resolve, reject) => {
    worker.once('message', (reply) =>
      reply.type === 'done' ? resolve(reply) : reject(new Error(`worker: ${reply.message}`)),
    );
    worker.send(msg);
  });
}

/** One target (a standalone master or the cluster): its servers, its workers, its totals. */
async function openTarget(target, ports, masterPorts) {
  const workers = Array.from({ length: PROCESSES }, () => fork(WORKER, [], { stdio: 'inherit' }));
  await Promise.all(
    workers.map((w, index) =>
      ask(w, { type: 'open', target, ports, prefix, index, processes: PROCESSES, lanes: LANES }),
    ),
  );
  const masters = masterPorts.map((port) => new Redis({ host: '127.0.0.1', port }));
  return { target, workers, masters, applies: 0, scriptCalls: 0, usec: 0 };
}

function side(t, stream) {
  return {
    id: t.target,
    label: `${PROCESSES} processes x createLedger({ store: createRedisStore({ client: ${
      t.target === 'cluster' ? 'new Cluster(...)' : 'new Redis(...)'
    } }) }).apply(...)`,
    async prepare() {
      const name = `run${runs++}`;
      await Promise.all(t.workers.map((w) => ask(w, { type: 'prepare', name })));
      return { before: await commandStats(t.masters) };
    },
    async run() {
      const replies = await Promise.all(t.workers.map((w) => ask(w, { type: 'run' })));
      // The client processes' CPU time is the run's (a server's is in neither side's ops/CPU-s).
      return {
        ops: replies.reduce((sum, r) => sum + r.ops, 0),
        cpuUs: replies.reduce((sum, r) => sum + r.cpuUs, 0),
      };
    },
    async dispose(state) {
      const after = await commandStats(t.masters);
      t.applies += stream.length;
      t.scriptCalls += after.scriptCalls - state.before.scriptCalls;
      t.usec += after.usec - state.before.usec;
    },
    async verify() {
      const name = `verify${runs++}`;
      const replies = await Promise.all(t.workers.map((w) => ask(w, { type: 'verify', name })));
      const counts = { applied: 0, duplicate: 0, stale: 0 };
      for (const r of replies) for (const k of Object.keys(counts)) counts[k] += r.counts[k];
      if (counts.applied !== stream.fresh || counts.duplicate !== stream.duplicates)
        throw new Error(`${t.target}: outcomes ${JSON.stringify(counts)}, expected ${stream.fresh} applied`);
    },
  };
}

const perApply = (t) =>
  t.applies === 0
    ? 'no run'
    : `${(t.scriptCalls / t.applies).toFixed(3)} script calls and ${(t.usec / t.applies).toFixed(1)} µs of server time per apply`;

let shared;

export default {
  name: 'redis-cluster',
  title: `Ledger apply on a 3-master Redis Cluster vs one Redis master, ${PROCESSES} client processes each`,
  async setup() {
    const single = await startRedis();
    const cluster = await startCluster();
    const stream = clusterWorkload(settlement, PROCESSES, LANES).stream;
    const targets = {
      single: await openTarget('single', [single.port], [single.port]),
      cluster: await openTarget('cluster', cluster.ports, cluster.ports),
    };
    shared = { single, cluster, stream, targets };
    return shared;
  },
  async teardown(s) {
    for (const t of Object.values(s.targets)) {
      await Promise.all(t.workers.map((w) => ask(w, { type: 'close' })));
      for (const m of t.masters) m.disconnect();
    }
    await s.cluster.stop();
    await s.single.remove();
  },
  describe: (s) =>
    `${s.stream.length.toLocaleString('en')} settlement deliveries to 2,000 players ` +
    `(${s.stream.fresh.toLocaleString('en')} fresh, ${s.stream.duplicates.toLocaleString('en')} repeats), ` +
    `${PROCESSES} processes x ${LANES} lanes partitioned by player, servers started by the suite; ` +
    `cluster: ${perApply(s.targets.cluster)}; one master: ${perApply(s.targets.single)}; ` +
    `server time ratio cluster/one master ${
      s.targets.single.usec === 0
        ? '-'
        : (
            s.targets.cluster.usec /
            s.targets.cluster.applies /
            (s.targets.single.usec / s.targets.single.applies)
          ).toFixed(2)
    }x (target <= 1.25x)`,
  comparisons: (s) => [
    {
      name: 'cluster vs one master',
      note: `the same ${PROCESSES} client processes' workload, on 3 masters and on 1`,
      target: 1,
      sides: [side(s.targets.cluster, s.stream), side(s.targets.single, s.stream)],
    },
  ],
};
