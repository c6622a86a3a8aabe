// onceflow's Idempotency-Key plugin for Fastify over real HTTP (fastify.listen on a free port,
// fetch), on the memory store and on Redis: the first request runs, a repeat replays it byte for
// byte (status, recorded headers, body) with `idempotent-replayed: true`, 409 while the first
// runs, 422 for the same key with another body, a missing key passed or refused, keys per user,
// a 5xx or a handler's error not recorded (the key is free again).
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  type IdempotencyPluginOptions,
  idempotencyPlugin,
  rateLimitPlugin,
} from '../../src/fastify/index.js';
import { PROBLEM_BASE } from '../../src/http/problem.js';
import { createIdempotency, createLimiter, memoryStore } from '../../src/index.js';
import { createRedisStore } from '../../src/redis/index.js';
import type { Store } from '../../src/store/store.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const redis = new Redis(REDIS_URL);
const prefix = runPrefix('fastify-idempotency');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

let n = 0;
const BACKENDS: { name: string; store(): Store }[] = [
  { name: 'memory', store: () => memoryStore() },
  { name: 'redis', store: () => createRedisStore({ client: redis, prefix }) },
];

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

// Headers of one connection or one moment, or of the rate limit: never part of a replay.
const UNRECORDED = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

async function snapshot(res: Response) {
  const headers = [...res.headers].filter(([name]) => !UNRECORDED.has(name));
  return { status: res.status, headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** `attempt` again (a few ms apart, 200 times at most) until `done` holds of its answer. */
async function eventually(attempt: () => Promise<Response>, done: (res: Response) => boolean) {
  for (let i = 0; ; i++) {
    const res = await attempt();
    if (done(res) || i >= 200) return res;
    await res.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

for (const backend of BACKENDS) {
  describe(`idempotencyPlugin on ${backend.name}`, () => {
    async function serve(options: Partial<IdempotencyPluginOptions> = {}, maxResultBytes?: number) {
      const app = Fastify();
      apps.push(app);
      const idempotency = createIdempotency({
        store: backend.store(),
        name: `orders-${++n}`,
        lease: '10s',
        ...(maxResultBytes === undefined ? {} : { maxResultBytes }),
      });
      await app.register(idempotencyPlugin, { idempotency, ...options });
      const runs = { count: 0 };
      const hold = { current: undefined as undefined | { entered: () => void; wait: Promise<void> } };
      const fail = { with: undefined as undefined | number | Error };
      app.post('/orders', async (request, reply) => {
        runs.count++;
        // Only the first run is held: a second one running beside it would answer at once.
        const held = hold.current;
        hold.current = undefined;
        if (held !== undefined) {
          held.entered();
          await held.wait;
        }
        const failure = fail.with;
        fail.with = undefined;
        if (failure instanceof Error) throw failure;
        if (failure !== undefined) return reply.code(failure).send({ error: 'busy' });
        reply.header('x-order-id', `ord_${runs.count}`);
        reply.header('set-cookie', `session=${runs.count}`);
        return reply.code(201).send({ id: `ord_${runs.count}`, body: request.body });
      });
      app.post('/bytes', async (_request, reply) => {
        runs.count++;
        reply.type('application/octet-stream');
        return Buffer.from([0, 255, 128, runs.count]);
      });
      app.post('/stream', async (_request, reply) => {
        runs.count++;
        reply.type('text/plain');
        return reply.send(Readable.from([`run ${runs.count}`]));
      });
      app.post('/strict', { config: { onceflow: { idempotency: { required: true } } } }, async () => {
        runs.count++;
        return { ok: true };
      });
      app.post('/raw', async (_request, reply) => {
        runs.count++;
        reply.hijack();
        reply.raw.writeHead(200, { 'content-type': 'text/plain' });
        reply.raw.end(`raw ${runs.count}`);
      });
      app.get('/orders', async () => {
        runs.count++;
        return [];
      });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const post = (path: string, key: string | undefined, body: unknown = { amount: 5 }, headers = {}) =>
        fetch(base + path, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(key === undefined ? {} : { 'idempotency-key': key }),
            ...headers,
          },
          body: JSON.stringify(body),
        });
      return { post, base, runs, hold, fail };
    }

    it('runs the first request and replays it byte for byte, headers and all', async () => {
      const { post, runs } = await serve();
      const first = await post('/orders', 'k1');
      expect(first.status).toBe(201);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const original = await snapshot(first);
      const again = await post('/orders', '"k1"'); // the draft's quoted form is the same key
      const replay = await snapshot(again);
      expect(runs.count).toBe(1);
      expect(replay.status).toBe(201);
      expect(replay.body.equals(original.body)).toBe(true);
      expect(JSON.parse(replay.body.toString())).toEqual({ id: 'ord_1', body: { amount: 5 } });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('x-order-id')).toBe('ord_1');
      expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
      // A session cookie given to the first request is not handed out again.
      expect(first.headers.get('set-cookie')).toBe('session=1');
      expect(again.headers.get('set-cookie')).toBeNull();
      const expected = original.headers.filter(([name]) => name !== 'set-cookie');
      expect(replay.headers.filter(([name]) => name !== 'idempotent-replayed')).toEqual(expected);
    });

    it('replays binary bytes as they were', async () => {
      const { post, runs } = await serve();
      const first = await snapshot(await post('/bytes', 'b1'));
      const replay = await snapshot(await post('/bytes', 'b1'));
      expect(runs.count).toBe(1);
      expect([...replay.body]).toEqual([0, 255, 128, 1]);
      expect(replay.body.equals(first.body)).toBe(true);
      expect(replay.headers).toContainEqual(['content-type', 'application/octet-stream']);
    });

    it('answers 409 to the same key while the first still runs, then replays', async () => {
      const { post, runs, hold } = await serve();
      const release = gate();
      const entered = gate();
      hold.current = { entered: entered.open, wait: release.opened };
      const first = post('/orders', 'k2');
      await entered.opened;
      const concurrent = await post('/orders', 'k2');
      expect(concurrent.status).toBe(409);
      expect(concurrent.headers.get('content-type')).toBe('application/problem+json');
      expect(Number(concurrent.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await concurrent.json()).toMatchObject({
        type: `${PROBLEM_BASE}idempotency-key-in-use`,
        status: 409,
      });
      release.open();
      expect((await first).status).toBe(201);
      const after = await post('/orders', 'k2');
      expect(after.headers.get('idempotent-replayed')).toBe('true');
      expect(runs.count).toBe(1);
    });

    it('keeps the key while the handler of a client gone away still runs, and records its reply', async () => {
      const { post, base, runs, hold } = await serve();
      const release = gate();
      const entered = gate();
      hold.current = { entered: entered.open, wait: release.opened };
      const abort = new AbortController();
      const gone = fetch(`${base}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'k9' },
        body: JSON.stringify({ amount: 5 }),
        signal: abort.signal,
      }).catch(() => 'aborted');
      await entered.opened;
      abort.abort();
      expect(await gone).toBe('aborted');
      // The first handler still runs: a retry must not run beside it.
      expect((await post('/orders', 'k9')).status).toBe(409);
      release.open();
      const replay = await eventually(
        () => post('/orders', 'k9'),
        (res) => res.status !== 409,
      );
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(runs.count).toBe(1);
    });

    it('does not record a hijacked reply: once it is sent, the key runs again', async () => {
      const { post, runs } = await serve();
      expect(await (await post('/raw', 'h1')).text()).toBe('raw 1');
      // The key is released when the raw response closes, just after the client has it.
      const again = await eventually(
        () => post('/raw', 'h1'),
        (res) => res.status !== 409,
      );
      expect(await again.text()).toBe('raw 2');
      expect(runs.count).toBe(2);
    });

    it('answers 422 to the same key with another body', async () => {
      const { post, runs } = await serve();
      await post('/orders', 'k3', { amount: 5 });
      const other = await post('/orders', 'k3', { amount: 9 });
      expect(other.status).toBe(422);
      expect(await other.json()).toMatchObject({
        type: `${PROBLEM_BASE}idempotency-key-reused`,
        status: 422,
      });
      expect(runs.count).toBe(1);
    });

    it('passes a request without a key; refuses it (400) where a key is required; 400 for a bad key', async () => {
      const { post, runs } = await serve();
      expect((await post('/orders', undefined)).status).toBe(201);
      expect((await post('/orders', undefined)).status).toBe(201);
      expect(runs.count).toBe(2);
      const missing = await post('/strict', undefined);
      expect(missing.status).toBe(400);
      expect(await missing.json()).toMatchObject({ type: `${PROBLEM_BASE}idempotency-key-missing` });
      const bad = await post('/orders', 'x'.repeat(256));
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ type: `${PROBLEM_BASE}idempotency-key-invalid` });
      expect(runs.count).toBe(2);
      // With its key, the route that requires one runs.
      expect((await post('/strict', 's1')).status).toBe(200);
      expect(runs.count).toBe(3);
    });

    it('keeps keys per user with scope', async () => {
      // The header stands for the identity an authentication hook would set.
      const { post, runs } = await serve({ scope: (request) => String(request.headers['x-user-id'] ?? '') });
      const alice = await post('/orders', 'same', { amount: 5 }, { 'x-user-id': 'alice' });
      const bob = await post('/orders', 'same', { amount: 5 }, { 'x-user-id': 'bob' });
      expect(runs.count).toBe(2);
      expect(alice.headers.get('x-order-id')).toBe('ord_1');
      expect(bob.headers.get('x-order-id')).toBe('ord_2');
      const aliceAgain = await post('/orders', 'same', { amount: 5 }, { 'x-user-id': 'alice' });
      expect(aliceAgain.headers.get('x-order-id')).toBe('ord_1');
      expect(runs.count).toBe(2);
    });

    it('does not record a 5xx or a handler error: the key runs again; a streamed reply is recorded', async () => {
      const { post, runs, fail } = await serve();
      fail.with = 503;
      expect((await post('/orders', 'k5')).status).toBe(503);
      expect((await post('/orders', 'k5')).status).toBe(201);
      expect(runs.count).toBe(2);

      const thrown = Object.assign(new Error('conflict downstream'), { statusCode: 409 });
      fail.with = thrown;
      const failed = await post('/orders', 'k6');
      expect(failed.status).toBe(409);
      expect(failed.headers.get('idempotent-replayed')).toBeNull();
      const retried = await post('/orders', 'k6');
      expect(retried.status).toBe(201);
      expect(runs.count).toBe(4);

      fail.with = new Error('boom');
      expect((await post('/orders', 'k7')).status).toBe(500);
      expect((await post('/orders', 'k7')).status).toBe(201);
      expect(runs.count).toBe(6);

      expect(await (await post('/stream', 'k8')).text()).toBe('run 7');
      const replay = await eventually(
        () => post('/stream', 'k8'),
        (res) => res.status !== 409,
      );
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(await replay.text()).toBe('run 7');
      expect(runs.count).toBe(7);
    });

    it('a replay carries its own rate limit headers, never the recorded ones', async () => {
      const app = Fastify();
      apps.push(app);
      const limiter = createLimiter({
        store: backend.store(),
        name: `rl-${++n}`,
        limits: [{ id: 'api', algorithm: 'fixed-window', limit: 10, window: '1h' }],
      });
      await app.register(rateLimitPlugin, { limiter });
      await app.register(idempotencyPlugin, {
        idempotency: createIdempotency({ store: backend.store(), name: `rl-orders-${n}` }),
      });
      app.post('/pay', async () => ({ paid: true }));
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      const pay = () => fetch(`${base}/pay`, { method: 'POST', headers: { 'idempotency-key': 'p1' } });
      expect((await pay()).headers.get('ratelimit')).toMatch(/^"api";r=9;t=\d+$/);
      const replay = await pay();
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.headers.get('ratelimit')).toMatch(/^"api";r=8;t=\d+$/);
      expect(await replay.json()).toEqual({ paid: true });
    });

    it('sends a reply over maxResultBytes and keeps its status and headers: the retry is told, never run again', async () => {
      const { post, runs } = await serve({}, 1024);
      const big = { amount: 'x'.repeat(1200) };
      const first = await post('/orders', 'big', big);
      expect(first.status).toBe(201);
      expect(((await first.json()) as { body: unknown }).body).toEqual(big);
      const again = await post('/orders', 'big', big);
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('idempotent-body')).toBe('omitted');
      expect(again.headers.get('x-order-id')).toBe('ord_1');
      expect(await again.text()).toBe('');
      expect(runs.count).toBe(1);
    });

    it('leaves other methods alone', async () => {
      const { base, runs } = await serve({ required: true });
      expect((await fetch(`${base}/orders`)).status).toBe(200);
      expect(runs.count).toBe(1);
    });
  });
}

describe('idempotencyPlugin options', () => {
  it('refuses a bad option at registration and a bad route policy where the route is declared', async () => {
    const idempotency = createIdempotency();
    const app = Fastify();
    apps.push(app);
    await expect(app.register(idempotencyPlugin, { idempotency, requird: true } as never)).rejects.toThrow(
      /did you mean `required`/,
    );
    const other = Fastify();
    apps.push(other);
    await other.register(idempotencyPlugin, { global: false });
    expect(() =>
      other.post('/x', { config: { onceflow: { idempotency: { required: true } } } }, async () => 'x'),
    ).toThrow(/POST \/x: config\.onceflow\.idempotency\.idempotency/);
  });
});
