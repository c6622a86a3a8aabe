// onceflow/express's idempotencyKey over real HTTP, on the memory store and on Redis: the first
// request runs and is recorded, a repeat is replayed byte for byte (status, headers, body), a
// concurrent one gets 409, another body 422, a missing key passes or gets 400, keys are per user,
// a 5xx is not recorded (a retry runs again), an oversized response is recorded without its body.
import express from 'express';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../src/express/index.js';
import { PROBLEM_BASE } from '../../src/http/problem.js';
import { createIdempotency } from '../../src/idempotency/idempotency.js';
import { createRedisStore } from '../../src/redis/index.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { listen } from '../support/express-app.js';
import { cleanupPrefix, REDIS_URL, runPrefix } from './redis-env.js';

const redis = new Redis(REDIS_URL);
const prefix = runPrefix('express-idempotency');
afterAll(async () => {
  await cleanupPrefix(redis, prefix);
  redis.disconnect();
});

let n = 0;
const TARGETS: { name: string; store: () => Store }[] = [
  { name: 'memory', store: () => memoryStore() },
  { name: 'redis', store: () => createRedisStore({ client: redis, prefix: `${prefix}${n++}:` }) },
];

// Every byte value, twice: a body no text encoding would carry through unchanged.
const BINARY = Buffer.concat([
  Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
  Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i)),
]);

interface App {
  url: string;
  runs: number;
  close(): Promise<void>;
}

/** An app whose routes count their runs; `gate` holds /slow until released. */
async function app(
  store: Store,
  options: Partial<Parameters<typeof idempotencyKey>[0]> = {},
  maxResultBytes?: number,
): Promise<App & { gate: { open(): void } }> {
  const idempotency = createIdempotency({ store, ...(maxResultBytes ? { maxResultBytes } : {}) });
  const a = express();
  let opened: () => void = () => {};
  let gate = new Promise<void>((r) => {
    opened = r;
  });
  const state = { runs: 0 };
  a.use(express.json());
  a.use(idempotencyKey({ idempotency, ...options }));
  a.post('/orders', (req, res) => {
    state.runs++;
    res
      .status(201)
      .set('x-order-id', `o-${state.runs}`)
      .set('set-cookie', 'session=abc')
      .json({
        id: `o-${state.runs}`,
        item: req.body?.item,
      });
  });
  a.post('/binary', (_req, res) => {
    state.runs++;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-parts': '2' });
    res.write(BINARY.subarray(0, 100));
    res.end(BINARY.subarray(100));
  });
  a.post('/slow', async (_req, res) => {
    state.runs++;
    await gate;
    res.status(202).send('done');
  });
  a.post('/flaky', (_req, res) => {
    state.runs++;
    if (state.runs === 1) res.status(503).send('try again');
    else res.status(201).send('made');
  });
  a.post('/big', (_req, res) => {
    state.runs++;
    res.send('x'.repeat(4096));
  });
  a.get('/orders', (_req, res) => {
    state.runs++;
    res.send('list');
  });
  const server = await listen(a);
  return {
    url: server.url,
    get runs() {
      return state.runs;
    },
    close: server.close,
    gate: {
      open() {
        opened();
        gate = Promise.resolve();
      },
    },
  };
}

const post = (
  url: string,
  key: string | undefined,
  body: unknown = { item: 'book' },
  headers: Record<string, string> = {},
) =>
  fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
      ...headers,
    },
    body: JSON.stringify(body),
  });

/** Status, headers (without the ones of one connection or moment), body bytes. */
async function seen(res: Response) {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!['date', 'connection', 'keep-alive'].includes(name)) headers[name] = value;
  });
  return { status: res.status, headers, body: Buffer.from(await res.arrayBuffer()) };
}

describe.each(TARGETS)('idempotencyKey on the $name store', (target) => {
  it('runs the first request and replays it byte for byte', async () => {
    const s = await app(target.store());
    try {
      const first = await seen(await post(`${s.url}/orders`, 'k1'));
      expect(first.status).toBe(201);
      expect(first.headers['set-cookie']).toBe('session=abc');
      const again = await seen(await post(`${s.url}/orders`, 'k1'));
      expect(s.runs).toBe(1);
      expect(again.status).toBe(201);
      expect(again.body.equals(first.body)).toBe(true);
      expect(JSON.parse(again.body.toString())).toEqual({ id: 'o-1', item: 'book' });
      const { 'set-cookie': _cookie, ...kept } = first.headers;
      expect(again.headers).toEqual({ ...kept, 'idempotent-replayed': 'true' });
      expect(again.headers['set-cookie']).toBeUndefined();
      // A quoted key (the draft's sf-string form) is the same key.
      expect((await seen(await post(`${s.url}/orders`, '"k1"'))).body.equals(first.body)).toBe(true);
      expect(s.runs).toBe(1);
    } finally {
      await s.close();
    }
  });

  it('replays a binary body written in parts, and headers given to writeHead', async () => {
    const s = await app(target.store());
    try {
      const first = await seen(await post(`${s.url}/binary`, 'bin'));
      expect(first.body.equals(BINARY)).toBe(true);
      const again = await seen(await post(`${s.url}/binary`, 'bin'));
      expect(s.runs).toBe(1);
      expect(again.status).toBe(200);
      expect(again.body.equals(BINARY)).toBe(true);
      expect(again.headers['content-type']).toBe('application/octet-stream');
      expect(again.headers['x-parts']).toBe('2');
      expect(again.headers['idempotent-replayed']).toBe('true');
    } finally {
      await s.close();
    }
  });

  it('answers 409 to a repeat while the first runs, then replays', async () => {
    const s = await app(target.store());
    try {
      const first = post(`${s.url}/slow`, 'slow');
      while (s.runs === 0) await new Promise((r) => setTimeout(r, 5));
      const busy = await post(`${s.url}/slow`, 'slow');
      expect(busy.status).toBe(409);
      expect(busy.headers.get('content-type')).toBe('application/problem+json');
      expect(Number(busy.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await busy.json()).toMatchObject({ type: `${PROBLEM_BASE}idempotency-key-in-use`, status: 409 });
      s.gate.open();
      expect((await first).status).toBe(202);
      const again = await post(`${s.url}/slow`, 'slow');
      expect([again.status, await again.text(), again.headers.get('idempotent-replayed')]).toEqual([
        202,
        'done',
        'true',
      ]);
      expect(s.runs).toBe(1);
    } finally {
      s.gate.open();
      await s.close();
    }
  });

  it('answers 422 to the same key with another body, or on another URL', async () => {
    const s = await app(target.store());
    try {
      expect((await post(`${s.url}/orders`, 'k2')).status).toBe(201);
      const other = await post(`${s.url}/orders`, 'k2', { item: 'pen' });
      expect(other.status).toBe(422);
      expect(await other.json()).toMatchObject({
        type: `${PROBLEM_BASE}idempotency-key-reused`,
        status: 422,
      });
      expect((await post(`${s.url}/orders?x=1`, 'k2')).status).toBe(422);
      expect(s.runs).toBe(1);
    } finally {
      await s.close();
    }
  });

  it('passes a request without a key (runs every time), and other methods', async () => {
    const s = await app(target.store());
    try {
      expect((await post(`${s.url}/orders`, undefined)).status).toBe(201);
      expect((await post(`${s.url}/orders`, undefined)).status).toBe(201);
      const list = await fetch(`${s.url}/orders`, { headers: { 'idempotency-key': 'k3' } });
      expect([list.status, list.headers.get('idempotent-replayed')]).toEqual([200, null]);
      expect(s.runs).toBe(3);
    } finally {
      await s.close();
    }
  });

  it('required: 400 without a key, 400 for a malformed one, the handler not run', async () => {
    const s = await app(target.store(), { required: true });
    try {
      const missing = await post(`${s.url}/orders`, undefined);
      expect(missing.status).toBe(400);
      expect(await missing.json()).toMatchObject({ type: `${PROBLEM_BASE}idempotency-key-missing` });
      const invalid = await post(`${s.url}/orders`, 'x'.repeat(256));
      expect(invalid.status).toBe(400);
      expect(await invalid.json()).toMatchObject({ type: `${PROBLEM_BASE}idempotency-key-invalid` });
      expect(s.runs).toBe(0);
    } finally {
      await s.close();
    }
  });

  it('scope: the same key of two users is two keys', async () => {
    const s = await app(target.store(), { scope: (req) => req.get('x-user') });
    try {
      const a = await seen(await post(`${s.url}/orders`, 'k4', undefined, { 'x-user': 'alice' }));
      const b = await seen(await post(`${s.url}/orders`, 'k4', undefined, { 'x-user': 'bob' }));
      expect(s.runs).toBe(2);
      expect(a.body.equals(b.body)).toBe(false);
      const a2 = await seen(await post(`${s.url}/orders`, 'k4', undefined, { 'x-user': 'alice' }));
      expect(a2.body.equals(a.body)).toBe(true);
      expect(s.runs).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('does not record a 5xx: the retry runs again, and is recorded', async () => {
    const s = await app(target.store());
    try {
      expect((await post(`${s.url}/flaky`, 'k5')).status).toBe(503);
      expect((await post(`${s.url}/flaky`, 'k5')).status).toBe(201);
      const third = await post(`${s.url}/flaky`, 'k5');
      expect([third.status, await third.text(), third.headers.get('idempotent-replayed')]).toEqual([
        201,
        'made',
        'true',
      ]);
      expect(s.runs).toBe(2);
    } finally {
      await s.close();
    }
  });

  it('records a response over maxResultBytes or maxBodyBytes without its body: replayed as omitted, not run again', async () => {
    // The default copy bound (3/4 of maxResultBytes), a copy bound of its own, and a copy that
    // fits its bound but not the record (the core drops the body).
    for (const [options, max] of [
      [{}, 1024],
      [{ maxBodyBytes: 1000 }, undefined],
      [{ maxBodyBytes: 100_000 }, 1024],
    ] as const) {
      const s = await app(target.store(), options, max);
      try {
        const first = await post(`${s.url}/big`, 'k6');
        expect([first.status, (await first.text()).length]).toEqual([200, 4096]);
        const second = await post(`${s.url}/big`, 'k6');
        expect([
          second.status,
          await second.text(),
          second.headers.get('content-type'),
          second.headers.get('idempotent-replayed'),
          second.headers.get('idempotent-body'),
        ]).toEqual([200, '', 'text/html; charset=utf-8', 'true', 'omitted']);
        expect(s.runs).toBe(1);
      } finally {
        await s.close();
      }
    }
  });
});

it('refuses bad options by name', () => {
  const idempotency = createIdempotency();
  expect(() => idempotencyKey({ idempotency, requried: true } as never)).toThrow(/requried/);
  expect(() => idempotencyKey({ idempotency, maxBodyBytes: -1 })).toThrow(/maxBodyBytes/);
  expect(() => idempotencyKey({} as never)).toThrow(/idempotency/);
});
