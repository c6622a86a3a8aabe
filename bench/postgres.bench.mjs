// The Postgres store next to hand-written SQL floors through the same pg pool: ledger apply at 8
// and 32 connections next to one statement per delivery doing the same writes (the owner's window
// row and balance, a journal insert); the same apply on the Redis store of this machine; and
// idempotency `run` next to the `SET NX`-style floor in SQL (INSERT ... ON CONFLICT DO NOTHING, then
// an UPDATE with the value, or a SELECT of it).
import { Redis } from 'ioredis';
import pg from 'pg';
import { createIdempotency, createLedger, defineSignature } from '../dist/index.js';
import { createPostgresStore, migrate } from '../dist/postgres/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { unlinkPrefix } from './lib/redis.mjs';
import { checkOutcomes, playerLanes, runLanes, settlementStream } from './lib/workload.mjs';

const PG_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// 1 000 players x 3 rounds x 2 settlements + 22% repeats ≈ 7 300 deliveries per run: a run of a
// few seconds at local PostgreSQL speeds, so rounds x sides x comparisons stays within minutes.
const PLAYERS = 1_000;
const ROUNDS = 3;
const DUP_RATE = 0.22;
// Calls in flight: more than either pool size, so the pool (not the caller) is the bottleneck,
// each lane owning the players of one partition and applying their deliveries in order.
const LANES = 64;
// A multiple of LANES: each lane owns as many keys.
const IDEM_KEYS = 4_096;
const LEASE_MS = 30_000;
const TTL_MS = 3_600_000;

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

const schema = `bench_pg_${process.pid}`;
const prefix = `bench-pg:${process.pid}:`;
const pools = {};
let redis;
let stream;
let lanes;
let runs = 0;

/** Runs `step(i)` for every delivery, in the lanes of playerLanes; resolves to how many ran. */
async function inLanes(step) {
  await runLanes(lanes, step);
  return stream.length;
}

const entry = (i) => ({
  owner: stream.owners[i],
  signature: stream.signatures[i],
  deltas: { coins: stream.nets[i] },
});

function postgresLedgerSide(connections) {
  return {
    id: 'onceflow',
    label: `createLedger({ store: createPostgresStore({ pool /* max ${connections} */ }) }).apply(...)`,
    prepare: () =>
      createLedger({
        store: createPostgresStore({ pool: pools[connections], schema, migrate: false }),
        capacity: 4,
        name: `run${runs++}`,
      }),
    run: (ledger) => inLanes((i) => ledger.apply(entry(i))),
    async verify() {
      const ledger = createLedger({
        store: createPostgresStore({ pool: pools[connections], schema, migrate: false }),
        capacity: 4,
        name: `verify${runs++}`,
      });
      const counts = { applied: 0, duplicate: 0, stale: 0 };
      await inLanes(async (i) => {
        counts[(await ledger.apply(entry(i))).outcome]++;
      });
      checkOutcomes(stream, counts);
    },
  };
}

// One statement per delivery: the owner's row (its last 4 signatures and its balance) upserted
// unless it holds the signature, and a journal row for what was booked. What a hand-written
// exactly-once apply looks like when it is done right; no horizon, no scopes, no seq, no meta.
const FLOOR_SQL = (table) => `
  WITH booked AS (
    INSERT INTO "${schema}".${table}_owner AS o (owner, sigs, coins) VALUES ($1, ARRAY[$2::text], $3::numeric)
    ON CONFLICT (owner) DO UPDATE
      SET sigs = (o.sigs || $2::text)[greatest(1, cardinality(o.sigs) - 2):], coins = o.coins + $3::numeric
      WHERE NOT ($2::text = ANY (o.sigs))
    RETURNING coins
  ), journal AS (
    INSERT INTO "${schema}".${table}_journal (owner, signature, delta) SELECT $1, $2, $3::numeric FROM booked
  )
  SELECT coins FROM booked`;

async function floorTables() {
  const table = `floor${runs++}`;
  const pool = pools[8];
  await pool.query(
    `CREATE TABLE "${schema}".${table}_owner (owner text PRIMARY KEY, sigs text[] NOT NULL, coins numeric NOT NULL)`,
  );
  await pool.query(
    `CREATE TABLE "${schema}".${table}_journal (id bigserial PRIMARY KEY, owner text NOT NULL, signature text NOT NULL, delta numeric NOT NULL)`,
  );
  return table;
}

function floorSide(connections) {
  return {
    id: 'sql-floor',
    label:
      'one INSERT ... ON CONFLICT DO UPDATE ... WHERE NOT sig = ANY(window) + journal INSERT (a CTE) per delivery',
    prepare: async () => ({ table: await floorTables(), pool: pools[connections] }),
    run: ({ table, pool }) => {
      const text = FLOOR_SQL(table);
      const name = `floor-${table}`;
      return inLanes((i) =>
        pool.query({ name, text, values: [stream.owners[i], stream.signatures[i], stream.nets[i]] }),
      );
    },
  };
}

const idemPayloads = Array.from({ length: IDEM_KEYS }, (_, i) => ({ id: `order-${i}`, amount: i }));
const effect = (p) => ({ charged: p.amount, ok: true });

/** Every key twice (executed, then a replay), LANES lanes, each lane its keys in order, twice. */
async function idemLanes(call) {
  const per = IDEM_KEYS / LANES;
  await Promise.all(
    Array.from({ length: LANES }, async (_, lane) => {
      for (let pass = 0; pass < 2; pass++)
        for (let j = 0; j < per; j++) {
          await call(idemPayloads[lane * per + j]);
        }
    }),
  );
  return IDEM_KEYS * 2;
}

const newPostgresIdem = () =>
  createIdempotency({
    store: createPostgresStore({ pool: pools[8], schema, migrate: false }),
    name: `run${runs++}`,
    lease: LEASE_MS,
    ttl: TTL_MS,
  });

async function newIdemFloor() {
  const table = `idem${runs++}`;
  const pool = pools[8];
  await pool.query(
    `CREATE TABLE "${schema}".${table} (key text PRIMARY KEY, value text, expires_at timestamptz NOT NULL)`,
  );
  let executed = 0;
  let replayed = 0;
  const take = `INSERT INTO "${schema}".${table} (key, expires_at) VALUES ($1, clock_timestamp() + $2 * interval '1 ms') ON CONFLICT DO NOTHING RETURNING 1`;
  const done = `UPDATE "${schema}".${table} SET value = $2, expires_at = clock_timestamp() + $3 * interval '1 ms' WHERE key = $1`;
  const read = `SELECT value FROM "${schema}".${table} WHERE key = $1`;
  return {
    counts: () => ({ executed, replayed }),
    async call(p) {
      const taken = await pool.query({ name: `${table}-take`, text: take, values: [p.id, LEASE_MS] });
      if (taken.rowCount === 1) {
        const value = effect(p);
        await pool.query({
          name: `${table}-done`,
          text: done,
          values: [p.id, JSON.stringify(value), TTL_MS],
        });
        executed++;
        return value;
      }
      const row = (await pool.query({ name: `${table}-read`, text: read, values: [p.id] })).rows[0];
      if (row?.value == null) return undefined;
      replayed++;
      return JSON.parse(row.value);
    },
  };
}

export default {
  name: 'postgres',
  title:
    'Postgres store: ledger apply (8 and 32 connections) vs a one-statement SQL floor and the Redis store; idempotency run vs INSERT ... ON CONFLICT DO NOTHING',
  async setup() {
    for (const n of [8, 32]) {
      pools[n] = new pg.Pool({ connectionString: PG_URL, max: n });
    }
    await migrate({ pool: pools[8], schema });
    redis = new Redis(REDIS_URL);
    stream = settlementStream({ sign: settlement, players: PLAYERS, rounds: ROUNDS, dupRate: DUP_RATE });
    lanes = playerLanes(stream, LANES);
    return stream;
  },
  async teardown() {
    await pools[8].query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    for (const p of Object.values(pools)) await p.end();
    await unlinkPrefix(redis, prefix);
    redis.disconnect();
  },
  describe: (s) =>
    `${s.length.toLocaleString('en')} deliveries to ${PLAYERS.toLocaleString('en')} players ` +
    `(${s.fresh.toLocaleString('en')} fresh, ${s.duplicates.toLocaleString('en')} repeats) in ${LANES} lanes; ` +
    `idempotency: ${IDEM_KEYS.toLocaleString('en')} keys x 2 calls; one local PostgreSQL (${PG_URL}) and Redis (${REDIS_URL})`,
  comparisons: () => [
    {
      name: 'ledger apply, 8 connections, vs the SQL floor',
      note: 'the same pool; the floor keeps no horizon, seq, meta or scope totals',
      target: 0.7,
      sides: [postgresLedgerSide(8), floorSide(8)],
    },
    {
      name: 'ledger apply, 32 connections, vs the SQL floor',
      note: 'the same pool; 2 cores serve both the server and the client here',
      target: 0.7,
      sides: [postgresLedgerSide(32), floorSide(32)],
    },
    {
      name: 'ledger apply on PostgreSQL (8 connections) vs on Redis',
      note: 'the same workload through createRedisStore on the local Redis (batched scripts): for scale, no target',
      sides: [
        postgresLedgerSide(8),
        {
          id: 'redis-store',
          label: 'createLedger({ store: createRedisStore({ client }) }).apply(...)',
          prepare: () =>
            createLedger({
              store: createRedisStore({ client: redis, prefix, journal: { maxEntriesPerOwner: 0 } }),
              capacity: 4,
              name: `run${runs++}`,
            }),
          run: (ledger) => inLanes((i) => ledger.apply(entry(i))),
        },
      ],
    },
    {
      name: 'idempotency run vs INSERT ... ON CONFLICT DO NOTHING (8 connections)',
      note: 'the floor: take by insert, UPDATE the value after fn, SELECT it on a repeat; no hash, token or lease check',
      target: 0.7,
      sides: [
        {
          id: 'onceflow',
          label: 'createIdempotency({ store: createPostgresStore(...) }).run({ key: id, payload }, fn)',
          prepare: newPostgresIdem,
          run: (idem) => idemLanes((p) => idem.run({ key: p.id, payload: p }, () => effect(p))),
          async verify() {
            const idem = newPostgresIdem();
            const counts = {};
            await idemLanes(async (p) => {
              const r = await idem.run({ key: p.id, payload: p }, () => effect(p));
              counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
            });
            if (counts.executed !== IDEM_KEYS || counts.replayed !== IDEM_KEYS)
              throw new Error(`outcomes ${JSON.stringify(counts)}`);
          },
        },
        {
          id: 'insert-on-conflict',
          label: 'INSERT ... ON CONFLICT DO NOTHING RETURNING 1; UPDATE ... SET value | SELECT value',
          prepare: newIdemFloor,
          run: (floor) => idemLanes((p) => floor.call(p)),
          async verify() {
            const floor = await newIdemFloor();
            await idemLanes((p) => floor.call(p));
            const c = floor.counts();
            if (c.executed !== IDEM_KEYS || c.replayed !== IDEM_KEYS)
              throw new Error(`floor ${JSON.stringify(c)}`);
          },
        },
      ],
    },
  ],
};
