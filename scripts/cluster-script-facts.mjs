#!/usr/bin/env node
// What Redis Cluster lets a Lua script do with keys it did not declare, the facts node variants
// (src/redis/node-batch.ts, lua/lib/node-batch.lua) rest on, checked on a cluster of its own:
// undeclared keys of other local slots with and without a shebang, declared keys of two slots, a
// key of another node (caught by redis.pcall), a key of a migrating slot (missing, present), and a
// key of an importing slot after ASKING (it passes for local: why node variants are never sent
// after ASKING). Prints one line per case.
// Usage: npm run build && node scripts/cluster-script-facts.mjs
import { Redis } from 'ioredis';
import { startCluster } from 'onceflow/testing';

const cluster = await startCluster();
const nodes = cluster.ports.map((port) => new Redis(port, '127.0.0.1'));
try {
  const ids = await Promise.all(nodes.map((n) => n.call('CLUSTER', 'MYID')));
  const ranges = await nodes[0].call('CLUSTER', 'SLOTS');
  const ownerOf = (slot) => cluster.ports.indexOf(ranges.find(([a, b]) => slot >= a && slot <= b)[2][1]);
  // Two keys of different slots on node 0, one on node 1.
  const found = [[], []];
  for (let i = 0; found[0].length < 2 || found[1].length < 1; i++) {
    const key = `{k${i}}x`;
    const slot = Number(await nodes[0].call('CLUSTER', 'KEYSLOT', key));
    const owner = ownerOf(slot);
    if (owner < 2 && found[owner].length < 2) found[owner].push([key, slot]);
  }
  const [[a], [b, slotB]] = found[0];
  const [[other]] = found[1];
  const flags = '#!lua flags=allow-cross-slot-keys\n';
  const write = "redis.call('SET', ARGV[1], 'v'); return redis.call('GET', ARGV[1])";
  const probe =
    "local r = redis.pcall('EXISTS', ARGV[1]); if type(r) == 'table' then return 'error: ' .. r.err end; return r";
  const show = async (label, run) => {
    try {
      console.log(`${label}: ${JSON.stringify(await run())}`);
    } catch (err) {
      console.log(`${label}: ${err.message}`);
    }
  };
  await show('no shebang, undeclared key of another local slot', () => nodes[0].eval(write, 1, a, b));
  await show('#!lua, undeclared key of another slot', () => nodes[0].eval(`#!lua\n${write}`, 1, a, b));
  await show('allow-cross-slot-keys, undeclared local key', () => nodes[0].eval(flags + write, 1, a, b));
  await show('allow-cross-slot-keys, two declared slots', () => nodes[0].eval(`${flags}return 1`, 2, a, b));
  await show('allow-cross-slot-keys, key of another node', () => nodes[0].eval(flags + write, 1, a, other));
  await show('pcall, key of another node', () => nodes[0].eval(flags + probe, 1, a, other));
  // Node 1 imports b's slot from node 0, where b exists.
  await nodes[1].call('CLUSTER', 'SETSLOT', slotB, 'IMPORTING', ids[0]);
  await nodes[0].call('CLUSTER', 'SETSLOT', slotB, 'MIGRATING', ids[1]);
  await show('migrating slot, present key', () => nodes[0].eval(flags + probe, 1, a, b));
  await show('migrating slot, missing key', () =>
    nodes[0].eval(flags + probe, 1, a, `{${b.slice(1, -2)}}gone`),
  );
  await show('importing slot, no ASKING', () => nodes[1].eval(flags + probe, 1, other, b));
  const asking = await nodes[1]
    .pipeline()
    .call('ASKING')
    .eval(flags + probe, 1, other, b)
    .exec();
  console.log(`importing slot after ASKING (the key still on the source): ${JSON.stringify(asking[1][1])}`);
} finally {
  for (const n of nodes) n.disconnect();
  await cluster.stop();
}
