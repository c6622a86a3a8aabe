// Requests per second through a real Express 5 server (in this process, reached over loopback
// HTTP with keep-alive): onceflow/express's rateLimit next to express-rate-limit, on memory
// (express-rate-limit's MemoryStore) and on Redis (rate-limit-redis over the same ioredis
// client); and the Idempotency-Key middleware on Redis next to the same route bare.
import http from 'node:http';
import express from 'express';
import { rateLimit as expressRateLimit } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { RedisStore } from 'rate-limit-redis';
import { idempotencyKey, rateLimit } from '../dist/express/index.js';
import { createIdempotency, createLimiter, memoryStore } from '../dist/index.js';
import { createRedisStore } from '../dist/redis/index.js';
import { unlinkPrefix } from './lib/redis.mjs';

const URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// 2 000 requests per run, 32 in flight (a loaded service's concurrent requests on one process):
// ~0.2-0.5 s per run at the rates of one Express process, so 7 runs per side fit the minute.
const REQUESTS = 2_000;
const CONCURRENCY = 32;
// 1 000 clients (x-user), so the counters are many keys, not one hot key; a limit no client
// reaches, so every request is admitted and every side does the same work per request.
const USERS = 1_000;
const LIMIT = 1_000_000_000;
const WINDOW_MS = 60_000;

let client;
const prefix = `bench-express:${process.pid}:`;
let runs = 0;

async function start(app) {
  app.get('/', (_req, res) => {
    res.send('ok');
  });
  app.post('/orders', (_req, res) => {
    res.status(201).json({ id: 'o-1', ok: true });
  });
  const server = http.createServer(app);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  return { server, agent, port: server.address().port, seen: { ok: 0, limited: 0, replayed: 0 } };
}

function stop(s) {
  s.agent.destroy();
  s.server.closeAllConnections();
  return new Promise((resolve) => s.server.close(resolve));
}

function request(s, method, path, headers, check) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: s.port, method, path, headers, agent: s.agent },
      (res) => {
        res.resume();
        res.on('end', () => {
          check?.(res);
          resolve(res.statusCode);
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** REQUESTS requests, CONCURRENCY lanes; `call(i)` sends the i-th. */
async function inLanes(call) {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) await call(next++);
    }),
  );
  return REQUESTS;
}

const getAll = (s) =>
  inLanes((i) =>
    request(s, 'GET', '/', { 'x-user': `u${i % USERS}` }, (res) => {
      if (res.statusCode === 200 && res.headers.ratelimit !== undefined) s.seen.ok++;
    }),
  );

function verifyAll(prepare) {
  return async (shared) => {
    const s = await prepare(shared);
    try {
      await getAll(s);
      if (s.seen.ok !== REQUESTS) throw new Error(`${s.seen.ok} of ${REQUESTS} answered 200 with RateLimit`);
    } finally {
      await stop(s);
    }
  };
}

const byUser = (req) => req.get('x-user') ?? 'anonymous';

function onceflowSide(store) {
  const prepare = () => {
    const limiter = createLimiter({
      store: store(),
      name: `bench-${runs++}`,
      algorithm: 'fixed-window',
      limit: LIMIT,
      window: WINDOW_MS,
    });
    const app = express();
    app.use(rateLimit({ limiter, key: byUser }));
    return start(app);
  };
  return {
    id: 'onceflow',
    label: "rateLimit({ limiter: createLimiter({ store, algorithm: 'fixed-window' }), key })",
    prepare,
    run: getAll,
    dispose: stop,
    verify: verifyAll(prepare),
  };
}

function erlSide(id, label, store) {
  const prepare = () => {
    const app = express();
    app.use(
      expressRateLimit({
        windowMs: WINDOW_MS,
        limit: LIMIT,
        keyGenerator: byUser,
        standardHeaders: 'draft-8',
        legacyHeaders: false,
        validate: false,
        ...(store ? { store: store() } : {}),
      }),
    );
    return start(app);
  };
  return { id, label, prepare, run: getAll, dispose: stop, verify: verifyAll(prepare) };
}

// Every request a new key: the first-run path (the key taken, the handler run, its response
// recorded before the end is let through).
function idempotentSide(bare) {
  const prepare = () => {
    const app = express();
    if (!bare) {
      const idempotency = createIdempotency({
        store: createRedisStore({ client, prefix: `${prefix}idem${runs++}:` }),
      });
      app.use(idempotencyKey({ idempotency }));
    }
    return start(app);
  };
  const run = (s) =>
    inLanes((i) =>
      request(s, 'POST', '/orders', { 'idempotency-key': `k-${i}` }, (res) => {
        if (res.statusCode === 201) s.seen.ok++;
      }),
    );
  return {
    id: bare ? 'bare' : 'onceflow',
    label: bare
      ? 'the same route, no middleware'
      : 'idempotencyKey({ idempotency }) on Redis, a new key per request',
    prepare,
    run,
    dispose: stop,
    async verify() {
      const s = await prepare();
      try {
        await run(s);
        if (s.seen.ok !== REQUESTS) throw new Error(`${s.seen.ok} of ${REQUESTS} answered 201`);
        if (!bare) {
          const replayed = await new Promise((resolve) => {
            const req = http.request(
              {
                port: s.port,
                host: '127.0.0.1',
                method: 'POST',
                path: '/orders',
                headers: { 'idempotency-key': 'k-0' },
              },
              (res) => {
                res.resume();
                res.on('end', () => resolve(res.headers['idempotent-replayed']));
              },
            );
            req.end();
          });
          if (replayed !== 'true') throw new Error('a repeated key was not replayed');
        }
      } finally {
        await stop(s);
      }
    },
  };
}

export default {
  name: 'express',
  title:
    'Express middleware: rateLimit vs express-rate-limit (memory, Redis); Idempotency-Key on Redis vs a bare route',
  async setup() {
    client = new Redis(URL);
    return {};
  },
  async teardown() {
    await unlinkPrefix(client, prefix);
    client.disconnect();
  },
  describe: () =>
    `${REQUESTS.toLocaleString('en')} requests per run, ${CONCURRENCY} in flight over keep-alive loopback HTTP, ` +
    `client and Express server in one process, ${USERS} users, one local Redis (${URL})`,
  comparisons: () => [
    {
      name: 'memory: rateLimit vs express-rate-limit (MemoryStore)',
      note: 'every request admitted; RateLimit headers on both (draft-8 form on express-rate-limit)',
      target: 1,
      sides: [
        onceflowSide(() => memoryStore()),
        erlSide(
          'express-rate-limit',
          'rateLimit({ windowMs, limit, keyGenerator, standardHeaders: draft-8 })',
        ),
      ],
    },
    {
      name: 'Redis: rateLimit vs express-rate-limit + rate-limit-redis',
      note: 'same ioredis client and Redis',
      target: 1,
      sides: [
        onceflowSide(() => createRedisStore({ client, prefix: `${prefix}rl${runs++}:` })),
        erlSide(
          'rate-limit-redis',
          'rateLimit({ store: new RedisStore({ sendCommand: client.call }) })',
          () =>
            new RedisStore({
              sendCommand: (...args) => client.call(...args),
              prefix: `${prefix}rlr${runs++}:`,
            }),
        ),
      ],
    },
    {
      name: 'Redis: idempotencyKey (new key per request) vs a bare route',
      note: 'the cost of the middleware per request: take the key, run, record, then end',
      sides: [idempotentSide(false), idempotentSide(true)],
    },
  ],
};
