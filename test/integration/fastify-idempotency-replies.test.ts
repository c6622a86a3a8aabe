// The Fastify Idempotency-Key plugin with replies of every shape over real HTTP: a streamed reply
// (a handler's Readable, or any payload gzipped into a stream by an onSend hook, as
// @fastify/compress does) is recorded whole within the copy bound, else as its status and
// headers; an empty reply is replayed as it was; a raw (Buffer) request body is fingerprinted;
// a store failing to record leaves the client with the handler's reply; a handler that never
// replies holds its key for `maxRunTime` at most.
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/core/errors.js';
import { type IdempotencyPluginOptions, idempotencyPlugin } from '../../src/fastify/index.js';
import { createIdempotency, memoryStore } from '../../src/index.js';
import type { Store } from '../../src/store/store.js';
import { wrapStore } from '../../src/testing/wrap-store.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

// Headers of one connection or one moment: never part of a replay.
const UNRECORDED = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);
const headersOf = (res: Response) => [...res.headers].filter(([name]) => !UNRECORDED.has(name));

async function serve(
  options: Partial<IdempotencyPluginOptions> = {},
  { store = memoryStore() as Store, maxResultBytes = 4096, setup = (_app: FastifyInstance) => {} } = {},
) {
  // A hung handler's connection must not hold close() up.
  const app = Fastify({ forceCloseConnections: true });
  apps.push(app);
  setup(app);
  const idempotency = createIdempotency({ store, name: 'replies', lease: '10s', maxResultBytes });
  await app.register(idempotencyPlugin, { idempotency, ...options });
  const runs = { count: 0 };
  app.post<{ Querystring: { size?: string } }>('/stream', async (request, reply) => {
    runs.count++;
    const size = Number(request.query.size ?? 10);
    reply.code(201).type('text/plain').header('x-run', String(runs.count));
    // Two chunks, so the copy meets a boundary mid-body.
    const half = Math.floor(size / 2);
    return reply.send(Readable.from([`${runs.count}`.padEnd(half, 'a'), 'b'.repeat(size - half)]));
  });
  app.post('/accepted', async (_request, reply) => {
    runs.count++;
    return reply.code(202).send();
  });
  app.post('/json', async (request) => {
    runs.count++;
    return { run: runs.count, size: JSON.stringify(request.body).length };
  });
  app.post('/echo', async (request) => {
    runs.count++;
    return { run: runs.count, echo: request.body };
  });
  app.post('/hang', async () => {
    runs.count++;
    return new Promise(() => {});
  });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const post = (path: string, key: string, init: RequestInit = {}) =>
    fetch(base + path, {
      method: 'POST',
      ...init,
      headers: { 'idempotency-key': key, ...(init.headers as Record<string, string> | undefined) },
    });
  return { app, base, post, runs };
}

/** `attempt` again (a few ms apart, 300 times at most) until `done` holds of its answer. */
async function eventually(attempt: () => Promise<Response>, done: (res: Response) => boolean) {
  for (let i = 0; ; i++) {
    const res = await attempt();
    if (done(res) || i >= 300) return res;
    await res.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
const settled = (res: Response) => res.status !== 409;

describe('idempotencyPlugin: replies of every shape', () => {
  it('records a streamed reply whole within the copy bound: the retry is a replay, the handler ran once', async () => {
    const { post, runs } = await serve();
    const first = await post('/stream', 's1');
    expect(first.status).toBe(201);
    const body = await first.text();
    expect(body).toBe(`1aaaabbbbb`);
    const again = await eventually(() => post('/stream', 's1'), settled);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('idempotent-body')).toBeNull();
    expect(again.headers.get('x-run')).toBe('1');
    expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(await again.text()).toBe(body);
    expect(runs.count).toBe(1);
  });

  it('keeps a streamed reply over the copy bound as its status and headers: the retry is told, never run again', async () => {
    // maxResultBytes 4096: bodies up to 3072 bytes are copied.
    const { post, runs } = await serve();
    const first = await post('/stream?size=5000', 's2');
    expect(first.status).toBe(201);
    expect((await first.text()).length).toBe(5000);
    const again = await eventually(() => post('/stream?size=5000', 's2'), settled);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('idempotent-body')).toBe('omitted');
    expect(again.headers.get('x-run')).toBe('1');
    expect(await again.text()).toBe('');
    expect(runs.count).toBe(1);
  });

  it('records a reply an onSend hook gzipped into a stream (as @fastify/compress does) and replays it', async () => {
    const gzip = (app: FastifyInstance) =>
      app.addHook('onSend', async (request, reply, payload) => {
        const accepts = String(request.headers['accept-encoding'] ?? '').includes('gzip');
        if (!accepts || reply.getHeader('content-encoding') !== undefined || typeof payload !== 'string')
          return payload;
        reply.header('content-encoding', 'gzip').header('vary', 'accept-encoding');
        reply.removeHeader('content-length');
        const zipped = createGzip();
        zipped.end(payload);
        return zipped;
      });
    // Random text: gzipped, still some 1500 bytes (over the 768 copied with maxResultBytes 1024).
    const note = randomBytes(1500).toString('base64');
    for (const [maxResultBytes, omitted] of [
      [65_536, false],
      [1024, true],
    ] as const) {
      const { post, runs } = await serve({}, { maxResultBytes, setup: gzip });
      const order = () =>
        post('/echo', 'g1', {
          headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' },
          body: JSON.stringify({ note }),
        });
      const first = await order();
      expect(first.headers.get('content-encoding')).toBe('gzip');
      expect(await first.json()).toEqual({ run: 1, echo: { note } });
      const again = await eventually(order, settled);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('idempotent-body')).toBe(omitted ? 'omitted' : null);
      if (omitted) expect(await again.arrayBuffer()).toHaveProperty('byteLength', 0);
      else {
        expect(again.headers.get('content-encoding')).toBe('gzip');
        expect(await again.json()).toEqual({ run: 1, echo: { note } });
      }
      expect(runs.count).toBe(1);
    }
  });

  it('replays an empty reply with the headers it had (no content-type added)', async () => {
    const { post, runs } = await serve();
    const first = await post('/accepted', 'e1');
    expect(first.status).toBe(202);
    const again = await post('/accepted', 'e1');
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(headersOf(again).filter(([name]) => name !== 'idempotent-replayed')).toEqual(headersOf(first));
    expect(await again.text()).toBe('');
    expect(runs.count).toBe(1);
  });

  it("fingerprints a raw body (a parseAs: 'buffer' content-type parser): it runs, replays, and another body is a 422", async () => {
    const raw = (app: FastifyInstance) =>
      app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_request, body, done) =>
        done(null, body),
      );
    const { post, runs } = await serve({}, { setup: raw });
    const send = (bytes: number[]) =>
      post('/json', 'r1', {
        headers: { 'content-type': 'application/octet-stream' },
        body: new Uint8Array(bytes),
      });
    const first = await send([1, 2, 3]);
    expect(first.status).toBe(200);
    const again = await send([1, 2, 3]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await first.json());
    expect((await send([1, 2, 4])).status).toBe(422);
    expect(runs.count).toBe(1);
  });

  it('a store failing to record leaves the client the handler reply and calls onRecordError once', async () => {
    const store = wrapStore(memoryStore(), {
      idempotencyComplete: () => Promise.reject(new StoreError('idempotencyComplete', new Error('down'))),
    });
    const reported: unknown[] = [];
    const { post, runs } = await serve({ onRecordError: (err) => reported.push(err) }, { store });
    const res = await post('/json', 'f1', {
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ run: 1, size: 7 });
    expect(runs.count).toBe(1);
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ code: 'ERR_STORE' });
  });

  it('releases the key of a handler that never replies after maxRunTime', async () => {
    const { base, post, runs } = await serve({ maxRunTime: '150ms' });
    const abort = new AbortController();
    const gone = fetch(`${base}/hang`, {
      method: 'POST',
      headers: { 'idempotency-key': 'h1' },
      signal: abort.signal,
    }).catch(() => 'aborted');
    while (runs.count === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    abort.abort();
    expect(await gone).toBe('aborted');
    // While the key is held a retry is answered 409 at once; once released, it runs the handler
    // again (which hangs too: the retry gives up on it).
    for (let i = 0; i < 300 && runs.count < 2; i++) {
      const res = await post('/hang', 'h1', { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
      if (res !== undefined) {
        expect(res.status).toBe(409);
        await res.arrayBuffer();
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(runs.count).toBe(2);
  });

  it('refuses a bad maxRunTime at registration and on a route', async () => {
    const idempotency = createIdempotency();
    const app = Fastify();
    apps.push(app);
    await expect(
      app.register(idempotencyPlugin, { idempotency, maxRunTime: '5 minutes' as never }),
    ).rejects.toThrow(/maxRunTime/);
    const other = Fastify();
    apps.push(other);
    await other.register(idempotencyPlugin, { idempotency });
    expect(() =>
      other.post('/x', { config: { onceflow: { idempotency: { maxRunTime: 0 } } } }, async () => 'x'),
    ).toThrow(/POST \/x: config\.onceflow\.idempotency\.maxRunTime/);
  });
});
