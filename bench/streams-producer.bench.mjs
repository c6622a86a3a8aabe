// The stream producer's publish next to raw XADDs through the same ioredis client: the same
// events (encoded the same way, with the same `e`/`i` fields), all in flight at once, so ioredis
// pipelines the raw XADDs on one connection. Target: publish >= 0.7x the raw XADD, which keeps
// no dedup record: deduplication may cost up to ~40% more time per event than the bare write.
import { Redis } from 'ioredis';
import { jsonSerializer } from '../dist/idempotency/serializer.js';
import { createStreamProducer } from '../dist/streams/producer.js';
import { dedupKeys } from '../dist/streams/producer-options.js';
import { unlinkPrefix } from './lib/redis.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// 20 000 events a run: ~50-200 ms per side on a local Redis, long enough to time, short enough
// for the rounds of a run to stay in one Redis memory footprint.
const EVENTS = 20_000;

let client;
const prefix = `bench-streams:${process.pid}:`;
let runs = 0;
let events;

// Settlement-like events: a player, a round, a bigint net, a flag (what seed 001 publishes).
function makeEvents() {
  return Array.from({ length: EVENTS }, (_, i) => ({
    id: `room-${i % 50}|round-${i >> 6}|player-${i % 2000}|final`,
    event: {
      room: `room-${i % 50}`,
      round: i >> 6,
      player: `player-${i % 2000}`,
      net: BigInt(i * 7 - 50_000),
      final: true,
    },
  }));
}

const fresh = () => `${prefix}{s${runs++}}`;

const producerSide = {
  id: 'onceflow',
  label:
    'createStreamProducer({ client, stream }).publish(event, { id }) (dedup + XADD, one script per batch)',
  prepare: () => createStreamProducer({ client, stream: fresh(), backlog: { maxEvents: EVENTS } }),
  async run(producer) {
    await Promise.all(events.map((e) => producer.publish(e.event, { id: e.id })));
    return EVENTS;
  },
  async verify() {
    const stream = fresh();
    const producer = createStreamProducer({ client, stream, backlog: { maxEvents: EVENTS } });
    const ids = await Promise.all(events.map((e) => producer.publish(e.event, { id: e.id })));
    const again = await Promise.all(events.slice(0, 100).map((e) => producer.publish(e.event, { id: e.id })));
    if ((await client.xlen(stream)) !== EVENTS) throw new Error('not every event was written once');
    if (again.some((id, i) => id !== ids[i]))
      throw new Error('a repeat was not answered with its first entry id');
  },
};

const rawSide = {
  id: 'xadd',
  label: "client.xadd(stream, '*', 'e', jsonSerializer.serialize(event), 'i', id), all in flight (pipelined)",
  prepare: fresh,
  async run(stream) {
    await Promise.all(
      events.map((e) => client.xadd(stream, '*', 'e', jsonSerializer.serialize(e.event), 'i', e.id)),
    );
    return EVENTS;
  },
};

export default {
  name: 'streams-producer',
  title: 'Stream producer publish vs raw pipelined XADD (same client, same events)',
  async setup() {
    client = new Redis(URL);
    events = makeEvents();
    return events;
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    for (let i = 0; i < runs; i++) for (const k of dedupKeys(`${prefix}{s${i}}`)) await client.unlink(k);
    client.disconnect();
  },
  describe: () =>
    `${EVENTS.toLocaleString('en')} events published at once, a fresh stream per run, one local Redis (${URL})`,
  comparisons: () => [
    {
      name: 'vs raw pipelined XADD',
      note: 'each event encoded with jsonSerializer on both sides; raw XADD has no dedup',
      target: 0.7,
      sides: [producerSide, rawSide],
    },
  ],
};
