// Every options object of the public surface refuses an unknown key (a JavaScript caller's typo
// would otherwise change nothing and say nothing) with a typed error that names the key and the
// option it was probably meant to be. Run against the built package (`dist/`, built by the global
// setup), entry point by entry point, as a user imports it.
//
// To extend: add a row to ROWS. A row calls one factory (or one method that takes an options
// bag) with valid options plus one misspelt key, and names the key and the suggestion the error
// must carry. The guard at the end fails when an entry point exports a `create*`/`define*`
// function or a class (other than an error) that no row calls, so a new factory cannot be
// forgotten here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { import?: string }>;
};

type Entry =
  | '.'
  | './testing'
  | './redis'
  | './postgres'
  | './streams'
  | './ws'
  | './ws/client'
  | './metrics';
// biome-ignore lint/suspicious/noExplicitAny: the built modules are loaded untyped, by path.
type Mod = Record<string, any>;
type Mods = Record<Entry, Mod>;

interface Row {
  /** The entry point and the export the row covers (what the guard below counts). */
  entry: Entry;
  export: string;
  /** What is called, for the test's name. */
  what: string;
  /** Calls it with one misspelt key; may return a promise (a factory that is async). */
  call: (m: Mod, ctx: Context) => unknown;
  /** The name the error gives the misspelt key (with its nested path: `limits[0].brust`). */
  key: string;
  /** The option the error suggests, or `undefined` when nothing is near (it lists them all). */
  suggest: string | undefined;
  /** `ERR_INVALID_ARGUMENT` for the object a call is given (an entry, a call's options). */
  code?: 'ERR_INVALID_OPTION' | 'ERR_INVALID_ARGUMENT';
}

/** What rows share: a store-less Redis client that never connects, a pool that never queries. */
interface Context {
  redis: Redis;
  pool: pg.Pool;
  aborted: AbortSignal;
  /** Things a row made that need stopping if the call did not refuse (a failing row). */
  made: unknown[];
}

const gcra = { algorithm: 'gcra', limit: 10, window: '1s' } as const;
const noop = () => undefined;

const ROWS: Row[] = [
  // --- onceflow (core) ---
  {
    entry: '.',
    export: 'createLedger',
    what: 'createLedger',
    call: (m) => m.createLedger({ capacity: 4, horizn: true }),
    key: 'horizn',
    suggest: 'horizon',
  },
  {
    entry: '.',
    export: 'createLedger',
    what: 'ledger.apply entry',
    call: (m) => m.createLedger({ capacity: 4 }).apply({ owner: 'p', signature: 's', deltas: {}, ordr: 1 }),
    key: 'ordr',
    suggest: 'order',
    code: 'ERR_INVALID_ARGUMENT',
  },
  {
    entry: '.',
    export: 'createLedger',
    what: 'ledger.resolve entry',
    call: (m) =>
      m.createLedger({ capacity: 4 }).resolve({ owner: 'p', signature: 's', deltas: {}, scop: 'room' }),
    key: 'scop',
    suggest: 'scope',
    code: 'ERR_INVALID_ARGUMENT',
  },
  {
    entry: '.',
    export: 'createLedger',
    what: 'ledger.journal query',
    call: (m) => m.createLedger({ capacity: 4 }).journal({ ownr: 'p' }),
    key: 'query.ownr',
    suggest: 'owner',
    code: 'ERR_INVALID_ARGUMENT',
  },
  {
    entry: '.',
    export: 'createLimiter',
    what: 'createLimiter (inline limit)',
    call: (m) => m.createLimiter({ ...gcra, degradd: 'deny' }),
    key: 'degradd',
    suggest: 'degraded',
  },
  {
    entry: '.',
    export: 'createLimiter',
    what: "createLimiter, a key near none (rate-limiter-flexible's inMemoryBlockOnConsumed)",
    call: (m) => m.createLimiter({ ...gcra, inMemoryBlockOnConsumed: 10 }),
    key: 'inMemoryBlockOnConsumed',
    suggest: undefined,
  },
  {
    entry: '.',
    export: 'createLocalFirstLimiter',
    what: 'createLocalFirstLimiter localFirst',
    call: (m) =>
      m.createLocalFirstLimiter({
        algorithm: 'sliding-log',
        limit: 10,
        window: 1000,
        localFirst: { nodes: 2, hotAftr: 3 },
      }),
    key: 'localFirst.hotAftr',
    suggest: 'hotAfter',
  },
  {
    entry: '.',
    export: 'createLocalFirstLimiter',
    what: 'createLocalFirstLimiter (the limiter options)',
    call: (m) =>
      m.createLocalFirstLimiter({
        algorithm: 'sliding-log',
        limit: 10,
        window: 1000,
        localFrist: { nodes: 2 },
      }),
    key: 'localFrist',
    suggest: 'localFirst',
  },
  {
    entry: '.',
    export: 'createLimiter',
    what: 'createLimiter limits[i]',
    call: (m) => m.createLimiter({ limits: [gcra, { ...gcra, id: 'b', brust: 5 }] }),
    key: 'limits[1].brust',
    suggest: 'burst',
  },
  {
    entry: '.',
    export: 'createLimiter',
    what: 'createLimiter blockCache',
    call: (m) => m.createLimiter({ ...gcra, blockCache: { mx: 10 } }),
    key: 'blockCache.mx',
    suggest: 'max',
  },
  {
    entry: '.',
    export: 'createLimiter',
    what: 'createLimiter degraded',
    call: (m) => m.createLimiter({ ...gcra, degraded: { mode: 'local', shar: 0.5 } }),
    key: 'degraded.shar',
    suggest: 'share',
  },
  {
    entry: '.',
    export: 'createLimiter',
    what: 'limiter.take options',
    call: (m) => m.createLimiter(gcra).take('u', { cots: 2 }),
    key: 'options.cots',
    suggest: 'cost',
    code: 'ERR_INVALID_ARGUMENT',
  },
  {
    entry: '.',
    export: 'createLookupGuard',
    what: 'createLookupGuard',
    call: (m) => m.createLookupGuard({ lookup: async () => null, nullRatoi: 0.5 }),
    key: 'nullRatoi',
    suggest: 'nullRatio',
  },
  {
    entry: '.',
    export: 'BloomFilter',
    what: 'new BloomFilter',
    call: (m) => new m.BloomFilter({ expected: 10, falsePositivRate: 0.01 }),
    key: 'falsePositivRate',
    suggest: 'falsePositiveRate',
  },
  {
    entry: '.',
    export: 'SeenFilter',
    what: 'new SeenFilter',
    call: (m) => new m.SeenFilter({ expected: 10, falsePositivRate: 0.01 }),
    key: 'falsePositivRate',
    suggest: 'falsePositiveRate',
  },
  {
    entry: '.',
    export: 'createTenantRegistry',
    what: 'createTenantRegistry',
    call: (m) => m.createTenantRegistry({ stor: m.memoryStore() }),
    key: 'stor',
    suggest: 'store',
  },
  {
    entry: '.',
    export: 'createTenantRegistry',
    what: 'tenants.init policy',
    call: (m) => m.createTenantRegistry().init('acme', { ...gcra, degradd: 'deny' }),
    key: 'policy.degradd',
    suggest: 'degraded',
    code: 'ERR_INVALID_ARGUMENT',
  },
  {
    entry: '.',
    export: 'createTenantRegistry',
    what: 'tenants.take options',
    call: (m) => {
      const tenants = m.createTenantRegistry();
      tenants.init('acme', gcra);
      return tenants.take('acme', 'u', { cots: 2 });
    },
    key: 'options.cots',
    suggest: 'cost',
    code: 'ERR_INVALID_ARGUMENT',
  },
  {
    entry: '.',
    export: 'createIdempotency',
    what: 'createIdempotency',
    call: (m) => m.createIdempotency({ leese: '1s' }),
    key: 'leese',
    suggest: 'lease',
  },
  {
    entry: '.',
    export: 'createIdempotency',
    what: 'idempotency.run call',
    call: (m) => m.createIdempotency().run({ key: 'k', paylod: { amount: 1 } }, noop),
    key: 'call.paylod',
    suggest: 'payload',
    code: 'ERR_INVALID_ARGUMENT',
  },
  {
    entry: '.',
    export: 'createIdempotency',
    what: 'idempotency.run options',
    call: (m) => m.createIdempotency().run({ key: 'k' }, noop, { wiat: true }),
    key: 'options.wiat',
    suggest: 'wait',
    code: 'ERR_INVALID_ARGUMENT',
  },
  {
    entry: '.',
    export: 'idempotent',
    what: 'idempotent',
    call: (m) => m.idempotent(noop, { key: () => 'k', tll: '1h' }),
    key: 'tll',
    suggest: 'ttl',
  },
  {
    entry: '.',
    export: 'createReorderer',
    what: 'createReorderer',
    call: (m) =>
      m.createReorderer({ next: 1, capacity: 10, gapTimeout: '1s', onRelease: noop, onGapp: noop }),
    key: 'onGapp',
    suggest: 'onGap',
  },
  {
    entry: '.',
    export: 'createReorderer',
    what: 'createReorderer checkpoint',
    call: (m) =>
      m.createReorderer({
        capacity: 10,
        gapTimeout: '1s',
        onRelease: noop,
        checkpoint: { store: m.memoryStore(), name: 'c', evry: 10 },
      }),
    key: 'checkpoint.evry',
    suggest: 'every',
  },
  {
    entry: '.',
    export: 'createCompensator',
    what: 'createCompensator',
    call: (m) => m.createCompensator({ request: async () => {}, concurency: 2 }),
    key: 'concurency',
    suggest: 'concurrency',
  },
  {
    entry: '.',
    export: 'createCompensator',
    what: 'createCompensator backoff',
    call: (m) => m.createCompensator({ request: async () => {}, backoff: { initail: 10 } }),
    key: 'backoff.initail',
    suggest: 'initial',
  },
  {
    entry: '.',
    export: 'ReorderBuffer',
    what: 'new ReorderBuffer',
    call: (m) => new m.ReorderBuffer({ capacity: 10, gapTimeout: '1s', overflw: 'reject' }),
    key: 'overflw',
    suggest: 'overflow',
  },
  {
    entry: '.',
    export: 'ReorderBuffer',
    what: 'new ReorderBuffer adaptive',
    call: (m) => new m.ReorderBuffer({ capacity: 10, gapTimeout: 'adaptive', adaptive: { quantle: 0.9 } }),
    key: 'adaptive.quantle',
    suggest: 'quantile',
  },
  {
    entry: '.',
    export: 'AdaptiveTimeout',
    what: 'new AdaptiveTimeout',
    call: (m) => new m.AdaptiveTimeout({ factr: 2 }),
    key: 'adaptive.factr',
    suggest: 'factor',
  },
  {
    entry: '.',
    export: 'SignatureWindow',
    what: 'new SignatureWindow',
    call: (m) => new m.SignatureWindow({ capacity: 4, horizon: true }),
    key: 'horizon',
    suggest: undefined,
  },
  {
    entry: '.',
    export: 'SignatureWindow',
    what: 'SignatureWindow.from',
    call: (m) => m.SignatureWindow.from([], { capacty: 4 }),
    key: 'capacty',
    suggest: 'capacity',
  },
  {
    entry: '.',
    export: 'Snowflake',
    what: 'new Snowflake',
    call: (m) => new m.Snowflake({ worker: 1, epoc: 0 }),
    key: 'epoc',
    suggest: 'epoch',
  },
  {
    entry: '.',
    export: 'Snowflake',
    what: 'Snowflake.start',
    call: (m) => m.Snowflake.start({ worker: 1, store: m.memoryStore(), name: 'ids', leas: '2s' }),
    key: 'leas',
    suggest: 'lease',
  },
  {
    entry: '.',
    export: 'VersionGate',
    what: 'new VersionGate',
    call: (m) => new m.VersionGate({ store: m.memoryStore(), nme: 'rows' }),
    key: 'nme',
    suggest: 'name',
  },
  {
    entry: '.',
    export: 'SequenceGuard',
    what: 'new SequenceGuard',
    call: (m) => new m.SequenceGuard({ nxt: 1 }),
    key: 'nxt',
    suggest: 'next',
  },
  {
    entry: '.',
    export: 'defineSignature',
    what: 'defineSignature',
    call: (m) => m.defineSignature([['room', 'string']], { hsh: true }),
    key: 'hsh',
    suggest: 'hash',
  },
  {
    entry: '.',
    export: 'memoryStore',
    what: 'memoryStore',
    call: (m) => m.memoryStore({ jurnal: {} }),
    key: 'jurnal',
    suggest: 'journal',
  },
  {
    entry: '.',
    export: 'memoryStore',
    what: 'memoryStore journal',
    call: (m) => m.memoryStore({ journal: { maxEntrys: 10 } }),
    key: 'journal.maxEntrys',
    suggest: 'maxEntries',
  },
  {
    entry: '.',
    export: 'ticker',
    what: 'ticker',
    call: (m, ctx) => {
      const t = m.ticker({ every: '1h', onTick: noop, algn: true });
      ctx.made.push(t);
      return t;
    },
    key: 'algn',
    suggest: 'align',
  },

  // --- onceflow/redis, onceflow/postgres, onceflow/streams ---
  {
    entry: './redis',
    export: 'createRedisStore',
    what: 'createRedisStore',
    call: (m, ctx) => m.createRedisStore({ client: ctx.redis, prefx: 'x:' }),
    key: 'prefx',
    suggest: 'prefix',
  },
  {
    entry: './redis',
    export: 'createRedisStore',
    what: 'createRedisStore journal',
    call: (m, ctx) => m.createRedisStore({ client: ctx.redis, journal: { maxEntriesPerOwnr: 5 } }),
    key: 'journal.maxEntriesPerOwnr',
    suggest: 'maxEntriesPerOwner',
  },
  {
    entry: './postgres',
    export: 'createPostgresStore',
    what: 'createPostgresStore',
    call: (m, ctx) => m.createPostgresStore({ pool: ctx.pool, shema: 'x' }),
    key: 'shema',
    suggest: 'schema',
  },
  {
    entry: './postgres',
    export: 'migrate',
    what: 'migrate',
    call: (m, ctx) => m.migrate({ pool: ctx.pool, shema: 'x' }),
    key: 'shema',
    suggest: 'schema',
  },
  {
    entry: './streams',
    export: 'createStreamProducer',
    what: 'createStreamProducer',
    call: (m, ctx) => {
      const p = m.createStreamProducer({ client: ctx.redis, stream: 's', retyr: {} });
      ctx.made.push(p);
      return p;
    },
    key: 'retyr',
    suggest: 'retry',
  },
  {
    entry: './streams',
    export: 'createStreamConsumer',
    what: 'createStreamConsumer',
    call: (m, ctx) =>
      m.createStreamConsumer({
        client: ctx.redis,
        stream: 's',
        group: 'g',
        consumer: 'c',
        handler: noop,
        signal: ctx.aborted,
        concurency: 2,
      }),
    key: 'concurency',
    suggest: 'concurrency',
  },
  {
    entry: './streams',
    export: 'trimStream',
    what: 'trimStream',
    call: (m, ctx) => m.trimStream({ client: ctx.redis, stream: 's', maxAge: '1h', mdoe: 'acked' }),
    key: 'mdoe',
    suggest: 'mode',
  },
  {
    entry: './streams',
    export: 'startRetention',
    what: 'startRetention',
    call: (m, ctx) => {
      const r = m.startRetention({
        client: ctx.redis,
        stream: 's',
        maxAge: '1h',
        every: '1h',
        signal: ctx.aborted,
        onErorr: noop,
      });
      ctx.made.push(r);
      return r;
    },
    key: 'onErorr',
    suggest: 'onError',
  },
  {
    entry: './streams',
    export: 'readWindow',
    what: 'readWindow',
    call: (m, ctx) => m.readWindow({ client: ctx.redis, stream: 's', from: 0, to: 1, pagSize: 10 }),
    key: 'pagSize',
    suggest: 'pageSize',
  },
  {
    entry: './ws',
    export: 'createGateway',
    what: 'createGateway',
    call: (m) => m.createGateway({ port: 0, handlrs: {} }),
    key: 'handlrs',
    suggest: 'handlers',
  },
  {
    entry: './ws',
    export: 'createPublisher',
    what: 'createPublisher',
    call: (m) => m.createPublisher({ stor: {} }),
    key: 'stor',
    suggest: 'store',
  },
  {
    entry: './ws/client',
    export: 'createClient',
    what: 'createClient',
    call: (m) => m.createClient({ url: 'ws://127.0.0.1:9/', WebSocket: class {}, reconect: false }),
    key: 'reconect',
    suggest: 'reconnect',
  },
  {
    entry: './metrics',
    export: 'createMetrics',
    what: 'createMetrics',
    call: (m) => m.createMetrics({ prefx: 'app_' }),
    key: 'prefx',
    suggest: 'prefix',
  },
  {
    entry: './metrics',
    export: 'createOtelMetrics',
    what: 'createOtelMetrics',
    call: async (m) =>
      m.createOtelMetrics({
        meter: (await import('@opentelemetry/api')).metrics.getMeter('t'),
        maxLabelValue: 5,
      }),
    key: 'maxLabelValue',
    suggest: 'maxLabelValues',
  },
  {
    entry: './postgres',
    export: 'withTransaction',
    what: 'withTransaction',
    call: (m, ctx) => m.withTransaction(ctx.pool, async () => undefined, { timout: '1s' }),
    key: 'timout',
    suggest: 'timeout',
  },
];

// Exports the guard counts that take no options object: a reason each.
const NO_OPTIONS: Record<string, string> = {
  FakeClock: 'constructor(now: number)',
};

const ENTRIES: Entry[] = [
  '.',
  './testing',
  './redis',
  './postgres',
  './streams',
  './ws',
  './ws/client',
  './metrics',
];
const mods = {} as Mods;
const ctx: Context = {
  // Never connects (lazyConnect) and refuses a command at once (no offline queue): a row whose
  // factory fails to refuse cannot reach a server or wait on one.
  redis: new Redis({
    port: 1,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  }),
  pool: new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', max: 1 }),
  aborted: AbortSignal.abort(),
  made: [],
};

beforeAll(async () => {
  for (const entry of ENTRIES) {
    const target = pkg.exports[entry];
    const file = typeof target === 'string' ? target : target?.import;
    if (file === undefined) throw new Error(`package.json exports ${entry} without an import target`);
    mods[entry] = (await import(join(root, file))) as Mod;
  }
});

afterAll(async () => {
  for (const made of ctx.made) {
    const thing = made as { stop?: () => unknown; close?: () => unknown };
    await (thing.stop ?? thing.close)?.call(thing);
  }
  ctx.redis.disconnect();
  await ctx.pool.end();
});

/** What the call threw or rejected with (a call that neither throws nor rejects fails the row). */
async function refusal(row: Row): Promise<unknown> {
  try {
    await row.call(mods[row.entry], ctx);
  } catch (err) {
    return err;
  }
  throw new Error(`${row.what} accepted the unknown key \`${row.key}\``);
}

describe('an unknown option key is refused, with a did-you-mean', () => {
  for (const row of ROWS) {
    it(`${row.entry === '.' ? 'onceflow' : `onceflow/${row.entry.slice(2)}`}: ${row.what} refuses \`${row.key}\``, async () => {
      const err = (await refusal(row)) as { code?: unknown; message?: unknown };
      const code = row.code ?? 'ERR_INVALID_OPTION';
      expect({ code: err.code, message: err.message }).toEqual({
        code,
        message: expect.stringContaining(`Expected \`${row.key}\` to be a known`),
      });
      expect(err.message).toContain(
        row.suggest === undefined ? '(one of `' : `(did you mean \`${row.suggest}\`?)`,
      );
    });
  }
});

describe('the table is whole', () => {
  it('every create*/define* export and every class (not an error) of every entry point has a row', () => {
    const covered = new Set(ROWS.map((r) => `${r.entry} ${r.export}`));
    const missing: string[] = [];
    for (const entry of ENTRIES) {
      for (const [name, value] of Object.entries(mods[entry])) {
        if (typeof value !== 'function') continue;
        const isClass = /^class\b/.test(Function.prototype.toString.call(value));
        const counted = /^(create|define)[A-Z]/.test(name) || (isClass && !/Error$/.test(name));
        if (counted && !covered.has(`${entry} ${name}`) && NO_OPTIONS[name] === undefined) {
          missing.push(`${entry} ${name}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('every row names an export that exists', () => {
    const absent = ROWS.filter((r) => typeof mods[r.entry][r.export] !== 'function').map(
      (r) => `${r.entry} ${r.export}`,
    );
    expect(absent).toEqual([]);
  });
});
