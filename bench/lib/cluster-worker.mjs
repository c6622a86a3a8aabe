// One client process of the redis-cluster suite, started by it with `fork`: it owns the players
// p with p % processes === index, opens one client (a Redis or a Cluster) and one Redis store,
// and on each message makes a fresh ledger, applies its share of the settlement stream, or closes.
// Messages: { type: 'open', target, ports, prefix, index, processes, lanes }, { type: 'prepare',
// name }, { type: 'run' }, { type: 'verify', name }, { type: 'close' }; each is answered with
// { type: 'done', ... } or { type: 'error', message }.
import { Cluster, Redis } from 'ioredis';
import { createLedger, defineSignature } from '../../dist/index.js';
import { createRedisStore } from '../../dist/redis/index.js';
import { clusterWorkload, registerRooms, runLanes, SETTLEMENT_FIELDS, settlementEntry } from './workload.mjs';

const settlement = defineSignature(SETTLEMENT_FIELDS);
let client;
let store;
let stream;
let lanes;
let ledger;

function open({ target, ports, prefix, index, processes, lanes: perProcess }) {
  client =
    target === 'cluster'
      ? new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })))
      : new Redis({ host: '127.0.0.1', port: ports[0] });
  client.on('error', () => {}); // a bench run fails on a rejected apply, not on a client event
  store = createRedisStore({ client, prefix, journal: { maxEntriesPerOwner: 0 } });
  const work = clusterWorkload(settlement, processes, perProcess);
  stream = work.stream;
  lanes = work.lanes.filter((_lane, l) => l % processes === index);
}

// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap (DESIGN §3.2).
async function newLedger(name) {
  const made = createLedger({ store, capacity: 4, name });
  // This process's (player, room) registrations, untimed: the run measures steady-state applies.
  await registerRooms(made, stream, lanes.flat());
  return made;
}

async function handle(msg) {
  switch (msg.type) {
    case 'open':
      open(msg);
      return {};
    case 'prepare':
      ledger = await newLedger(msg.name);
      return {};
    case 'run': {
      const c0 = process.cpuUsage();
      let ops = 0;
      await runLanes(lanes, async (i) => {
        await ledger.apply(settlementEntry(stream, i));
        ops++;
      });
      const cpu = process.cpuUsage(c0);
      return { ops, cpuUs: cpu.user + cpu.system };
    }
    case 'verify': {
      const checked = await newLedger(msg.name);
      const counts = { applied: 0, duplicate: 0, stale: 0 };
      await runLanes(lanes, async (i) => {
        counts[(await checked.apply(settlementEntry(stream, i))).outcome]++;
      });
      return { counts };
    }
    case 'close':
      client.disconnect();
      return {};
    default:
      throw new Error(`unknown message ${msg.type}`);
  }
}

process.on('message', (msg) => {
  handle(msg).then(
    (reply) => {
      process.send({ type: 'done', ...reply });
      if (msg.type === 'close') process.disconnect();
    },
    (err) => process.send({ type: 'error', message: err?.stack ?? String(err) }),
  );
});
