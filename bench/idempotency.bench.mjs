// Idempotent calls: `idem.run` on the memory store next to a bare floor (a Map of records doing
// the same checks), and on Redis at concurrency 200 next to AWS Powertools idempotency
// (makeIdempotent + CachePersistenceLayer over @redis/client, outside Lambda) and next to a
// hand-written SET NX PX + GET over the same ioredis client.
import { createHash, randomUUID } from 'node:crypto';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import { createClient } from '@redis/client';
import { Redis } from 'ioredis';
import { createIdempotency, memoryStore } from '../dist/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { unlinkPrefix } from './lib/redis.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// Memory: 50 000 calls per run, enough for ~10+ ms per run at the rates measured.
const MEMORY_CALLS = 50_000;
// Redis: 10 000 keys per run, each called twice in its lane (the first runs fn, the second is a
// retry that replays): 20 000 calls, 200 in flight (a busy service's concurrent requests: more
// than one script batch of IDEMPOTENCY_MAX_BATCH per turn, so the batching is what is measured).
const KEYS = 10_000;
const CONCURRENCY = 200;
const LEASE_MS = 30_000;
const TTL_MS = 3_600_000;

let client;
let powertoolsClient;
const prefix = `bench-idem:${process.pid}:`;
let runs = 0;
const payloads = Array.from({ length: Math.max(MEMORY_CALLS, KEYS) }, (_, i) => ({
  id: `order-${i}`,
  amount: i,
}));
const effect = (p) => ({ charged: p.amount, ok: true });

/** Runs every key twice, CONCURRENCY lanes in parallel, each lane its own keys in order, twice. */
async function inLanes(call) {
  const per = KEYS / CONCURRENCY;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, lane) => {
      for (let pass = 0; pass < 2; pass++) for (let j = 0; j < per; j++) await call(payloads[lane * per + j]);
    }),
  );
  return KEYS * 2;
}

// The floor: what any record of a key must do per call, in a Map: hash the payload (sha256 of
// its JSON), look the key up, check expiry and hash, take it with a fresh token, store the value
// serialized (JSON); a replay parses it back.
function floorStore() {
  const records = new Map();
  return {
    records,
    run(key, payload, fn) {
      const hash = createHash('sha256').update(JSON.stringify(payload)).digest('base64url');
      const now = Date.now();
      const r = records.get(key);
      if (r !== undefined && now < r.expiresAt) {
        if (r.hash !== hash) return { outcome: 'mismatch' };
        if (!r.inProgress) return { outcome: 'replayed', value: JSON.parse(r.value) };
        return { outcome: 'in-progress', retryAfterMs: r.expiresAt - now };
      }
      const token = randomUUID();
      const record = { inProgress: true, token, hash, value: '', expiresAt: now + LEASE_MS };
      records.set(key, record);
      const value = fn();
      if (record.token === token && Date.now() < record.expiresAt) {
        record.inProgress = false;
        record.value = JSON.stringify(value);
        record.expiresAt = Date.now() + TTL_MS;
      }
      return { outcome: 'executed', value };
    },
  };
}

// A completed key: order-0 with its own payload every call; else a new key (and payload) per call.
const payloadOf = (completed, i) => (completed ? payloads[0] : payloads[i]);

async function memoryRuns(idem, completed) {
  for (let i = 0; i < MEMORY_CALLS; i++) {
    const p = payloadOf(completed, i);
    await idem.run({ key: p.id, payload: p }, () => effect(p));
  }
  return MEMORY_CALLS;
}

async function floorRuns(floor, completed) {
  for (let i = 0; i < MEMORY_CALLS; i++) {
    const p = payloadOf(completed, i);
    // Awaited as `run` is, so both sides pay one promise turn per call.
    await floor.run(p.id, p, () => effect(p));
  }
  return MEMORY_CALLS;
}

function memorySide(completed) {
  return {
    id: 'onceflow',
    label: 'createIdempotency({ store: memoryStore() }).run({ key, payload }, fn)',
    async prepare() {
      const idem = createIdempotency({ store: memoryStore(), lease: LEASE_MS, ttl: TTL_MS });
      if (completed) await idem.run({ key: 'order-0', payload: payloads[0] }, () => effect(payloads[0]));
      return idem;
    },
    run: (idem) => memoryRuns(idem, completed),
    async verify() {
      const idem = createIdempotency({ store: memoryStore(), lease: LEASE_MS, ttl: TTL_MS });
      if (completed) await idem.run({ key: 'order-0', payload: payloads[0] }, () => effect(payloads[0]));
      const counts = {};
      for (let i = 0; i < 1000; i++) {
        const p = payloadOf(completed, i);
        const r = await idem.run({ key: p.id, payload: p }, () => effect(p));
        counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
      }
      const want = completed ? 'replayed' : 'executed';
      if (counts[want] !== 1000) throw new Error(`memory outcomes ${JSON.stringify(counts)}`);
    },
  };
}

function floorSide(completed) {
  return {
    id: 'floor',
    label: 'a Map of records: sha256 payload hash, expiry and hash checks, token, JSON value',
    prepare() {
      const floor = floorStore();
      if (completed) floor.run('order-0', payloads[0], () => effect(payloads[0]));
      return floor;
    },
    run: (floor) => floorRuns(floor, completed),
  };
}

async function newRedisIdem() {
  return createIdempotency({
    store: createRedisStore({ client, prefix }),
    name: `run${runs++}`,
    lease: LEASE_MS,
    ttl: TTL_MS,
  });
}

const onceflowRedis = {
  id: 'onceflow',
  label: 'createIdempotency({ store: createRedisStore(...) }).run({ key: id, payload }, fn)',
  prepare: newRedisIdem,
  run: (idem) => inLanes((p) => idem.run({ key: p.id, payload: p }, () => effect(p))),
  async verify() {
    const idem = await newRedisIdem();
    const counts = {};
    await inLanes(async (p) => {
      const r = await idem.run({ key: p.id, payload: p }, () => effect(p));
      counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
    });
    if (counts.executed !== KEYS || counts.replayed !== KEYS)
      throw new Error(`outcomes ${JSON.stringify(counts)}`);
  },
};

function newPowertools() {
  const persistenceStore = new CachePersistenceLayer({ client: powertoolsClient });
  return makeIdempotent(async (p) => effect(p), {
    persistenceStore,
    keyPrefix: `${prefix}pt${runs++}`,
    config: new IdempotencyConfig({
      eventKeyJmesPath: 'id',
      // No payloadValidationJmesPath: CachePersistenceLayer 2.35.0 drops the validation hash when
      // it stores the result (_updateRecord), so every replay would fail validation.
      expiresAfterSeconds: TTL_MS / 1000,
    }),
  });
}

// The hand-written baseline: SET key '' NX PX lease takes the key; the holder stores the value
// with SET PX ttl; a caller that finds the key taken GETs it ('' while in progress).
function newHandWritten() {
  const base = `${prefix}hw${runs++}:`;
  let executed = 0;
  let replayed = 0;
  return {
    counts: () => ({ executed, replayed }),
    async call(p) {
      const key = base + p.id;
      if ((await client.set(key, '', 'PX', LEASE_MS, 'NX')) === 'OK') {
        const value = effect(p);
        await client.set(key, JSON.stringify(value), 'PX', TTL_MS);
        executed++;
        return value;
      }
      const text = await client.get(key);
      if (text === null || text === '') return undefined;
      replayed++;
      return JSON.parse(text);
    },
  };
}

export default {
  name: 'idempotency',
  title: `Idempotent calls: memory run vs a Map floor; Redis run (concurrency ${CONCURRENCY}) vs Powertools and SET NX PX + GET`,
  async setup() {
    client = new Redis(URL);
    powertoolsClient = await createClient({ url: URL }).connect();
    return {};
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    client.disconnect();
    await powertoolsClient.close?.();
    powertoolsClient.destroy?.();
  },
  describe: () =>
    `memory: ${MEMORY_CALLS.toLocaleString('en')} calls per run; Redis: ${KEYS.toLocaleString('en')} keys x 2 calls ` +
    `(executed, then a replay) in ${CONCURRENCY} lanes, one local Redis (${URL})`,
  comparisons: () => [
    {
      name: 'memory: run of a completed key (replay) vs floor',
      note: 'the same key and payload every call: hash, lookup, checks, value deserialized',
      sides: [memorySide(true), floorSide(true)],
    },
    {
      name: 'memory: run of a new key vs floor',
      note: 'a new key every call: hash, lookup, take, fn, value serialized and stored',
      sides: [memorySide(false), floorSide(false)],
    },
    {
      name: 'Redis: run vs Powertools makeIdempotent (CachePersistenceLayer, @redis/client)',
      note: 'eventKeyJmesPath id, no payload validation (see the side), no local cache; same Redis',
      target: 2,
      sides: [
        onceflowRedis,
        {
          id: 'powertools',
          label: 'makeIdempotent(fn, { persistenceStore: new CachePersistenceLayer({ client }) })(event)',
          prepare: newPowertools,
          run: (fn) => inLanes((p) => fn(p)),
        },
      ],
    },
    {
      name: 'Redis: run vs hand-written SET NX PX + GET',
      note: 'same ioredis client; no payload check, no fencing token, no renewal',
      target: 0.7,
      sides: [
        onceflowRedis,
        {
          id: 'set-nx',
          label: "SET key '' NX PX lease; SET key value PX ttl | GET key",
          prepare: newHandWritten,
          run: (hw) => inLanes((p) => hw.call(p)),
          async verify() {
            const hw = newHandWritten();
            await inLanes((p) => hw.call(p));
            const c = hw.counts();
            if (c.executed !== KEYS || c.replayed !== KEYS) throw new Error(`set-nx ${JSON.stringify(c)}`);
          },
        },
      ],
    },
  ],
};
