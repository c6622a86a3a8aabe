// onceflow/hono's idempotencyKey over real HTTP (@hono/node-server on a free port, global fetch)
// and the Web-standard path (app.fetch(new Request)), on the memory store and on Redis: the first
// request runs, a repeat replays byte for byte (a binary body, its headers), a concurrent one gets
// 409, another body 422, a missing key passes or 400, keys per user, 5xx and thrown handlers not
// recorded, and the handler still reads the body the middleware fingerprinted.
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../src/hono/index.js';
import { createIdempotency } from '../../src/index.js';
import { idempotencyHarness, matrix } from './hono-env.js';

const DOCS = 'https://github.com/onceflow/onceflow/blob/main/docs/http.md#';
// Every byte value, twice, and bytes that are not UTF-8 (0xff, a lone continuation byte).
const BINARY = new Uint8Array(512).map((_, i) => i % 256);

// Headers that belong to one connection or moment: never compared between two responses. (The
// first response's body is relayed as it is written, so Node sends it chunked; a replay's length
// is known.)
const VOLATILE = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'idempotent-replayed',
]);
const stable = (res: Response) => [...res.headers].filter(([name]) => !VOLATILE.has(name));

const post = (key: string | undefined, body: RequestInit['body'], headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: key === undefined ? headers : { ...headers, 'idempotency-key': key },
  ...(body === undefined ? {} : { body }),
});

for (const [title, transport, binding] of matrix('hono-idempotency')) {
  describe(`hono idempotencyKey (${title})`, () => {
    const { middleware, open } = idempotencyHarness(transport, binding, 'orders');

    it('the first request runs; a repeat replays status, headers and a binary body byte for byte', async () => {
      let runs = 0;
      const app = new Hono();
      app.post('/files', middleware(), async (c) => {
        runs++;
        const body = new Uint8Array(await c.req.arrayBuffer());
        const out = new Uint8Array(BINARY.length + body.length);
        out.set(BINARY);
        out.set(body, BINARY.length);
        c.header('set-cookie', 'session=one-request-only');
        c.header('x-run', String(runs));
        c.header('link', '</a>; rel="a"');
        c.header('link', '</b>; rel="b"', { append: true });
        return c.body(out, 201, { 'content-type': 'application/octet-stream' });
      });
      const send = await open(app);
      const first = await send('/files', post('k1', new Uint8Array([0, 255, 128])));
      const firstBytes = new Uint8Array(await first.arrayBuffer());
      expect(first.status).toBe(201);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      expect(first.headers.get('set-cookie')).toBe('session=one-request-only');
      expect([...firstBytes.subarray(BINARY.length)]).toEqual([0, 255, 128]);
      for (let i = 0; i < 2; i++) {
        const again = await send('/files', post('k1', new Uint8Array([0, 255, 128])));
        expect(again.status).toBe(201);
        expect(again.headers.get('idempotent-replayed')).toBe('true');
        expect(new Uint8Array(await again.arrayBuffer())).toEqual(firstBytes);
        // A session cookie given to one request is not handed out again; all else is the same.
        expect(again.headers.get('set-cookie')).toBeNull();
        expect(stable(again)).toEqual(stable(first).filter(([name]) => name !== 'set-cookie'));
        expect(again.headers.get('link')).toBe('</a>; rel="a", </b>; rel="b"');
      }
      expect(runs).toBe(1);
    });

    it('the handler reads the body the middleware fingerprinted, through c.req and c.req.raw', async () => {
      const app = new Hono();
      app.post('/json', middleware(), async (c) => c.json({ parsed: await c.req.json() }));
      app.post('/raw', middleware(), async (c) => c.text(await c.req.raw.text()));
      const send = await open(app);
      const json = await send('/json', post('k1', '{"item":"tea"}', { 'content-type': 'application/json' }));
      expect(await json.json()).toEqual({ parsed: { item: 'tea' } });
      expect(await (await send('/raw', post('k1', 'plain body'))).text()).toBe('plain body');
    });

    it('after middleware that parsed the body (a validator), and for a 204: replayed all the same', async () => {
      let runs = 0;
      const app = new Hono();
      app.post('/items', async (c, next) => {
        if (typeof (await c.req.json()).name !== 'string') return c.text('name?', 400);
        await next();
      });
      app.post('/items', middleware(), async (c) =>
        c.json({ item: ++runs, name: (await c.req.json()).name }, 201),
      );
      app.post('/touch', middleware(), (c) => {
        runs++;
        return c.body(null, 204, { 'x-touched': 'yes' });
      });
      const send = await open(app);
      const first = await send('/items', post('k1', '{"name":"tea"}'));
      expect([first.status, await first.json()]).toEqual([201, { item: 1, name: 'tea' }]);
      const again = await send('/items', post('k1', '{"name":"tea"}'));
      expect([again.status, await again.json()]).toEqual([201, { item: 1, name: 'tea' }]);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect((await send('/items', post('k1', '{"name":"tee"}'))).status).toBe(422);
      for (let i = 0; i < 2; i++) {
        const touched = await send('/touch', post('k1', ''));
        expect([touched.status, await touched.text(), touched.headers.get('x-touched')]).toEqual([
          204,
          '',
          'yes',
        ]);
      }
      expect(runs).toBe(2);
    });

    it('a repeat while the first still runs: 409 with Retry-After; once it is done, the replay', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      let started!: () => void;
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      let runs = 0;
      const app = new Hono();
      app.post('/pay', middleware(), async (c) => {
        runs++;
        started();
        await gate;
        return c.json({ paid: runs }, 201);
      });
      const send = await open(app);
      const first = send('/pay', post('k1', '{"amount":5}'));
      await running;
      const busy = await send('/pay', post('k1', '{"amount":5}'));
      expect(busy.status).toBe(409);
      expect(busy.headers.get('content-type')).toBe('application/problem+json');
      expect(Number(busy.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await busy.json()).toMatchObject({ type: `${DOCS}idempotency-key-in-use`, status: 409 });
      release();
      expect(await (await first).json()).toEqual({ paid: 1 });
      const replay = await send('/pay', post('k1', '{"amount":5}'));
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(await replay.json()).toEqual({ paid: 1 });
      expect(runs).toBe(1);
    });

    it('the same key with another body or URL: 422, and nothing runs', async () => {
      let runs = 0;
      const app = new Hono();
      const idem = middleware();
      app.post('/pay/*', idem, (c) => c.text(String(++runs), 201));
      const send = await open(app);
      expect((await send('/pay/a', post('k1', '{"amount":5}'))).status).toBe(201);
      for (const [path, body] of [
        ['/pay/a', '{"amount":6}'],
        ['/pay/a', '{ "amount":5}'], // other bytes: the draft's fingerprint is of the payload as sent
        ['/pay/a?x=1', '{"amount":5}'],
        ['/pay/b', '{"amount":5}'],
      ] as const) {
        const reused = await send(path, post('k1', body));
        expect(reused.status, `${path} ${body}`).toBe(422);
        expect(await reused.json()).toMatchObject({ type: `${DOCS}idempotency-key-reused`, status: 422 });
      }
      expect(runs).toBe(1);
    });

    it('a missing key passes (runs each time) or, when required, is refused 400; a bad key is 400', async () => {
      let runs = 0;
      const app = new Hono();
      app.post('/open', middleware(), (c) => c.text(String(++runs)));
      app.post('/strict', middleware({ required: true }), (c) => c.text(String(++runs)));
      app.get('/strict', (c) => c.text('reads need no key'));
      const send = await open(app);
      expect(await (await send('/open', post(undefined, 'x'))).text()).toBe('1');
      expect(await (await send('/open', post(undefined, 'x'))).text()).toBe('2');
      const missing = await send('/strict', post(undefined, 'x'));
      expect(missing.status).toBe(400);
      expect(await missing.json()).toMatchObject({ type: `${DOCS}idempotency-key-missing`, status: 400 });
      const invalid = await send('/strict', post('"unterminated', 'x'));
      expect(invalid.status).toBe(400);
      expect(await invalid.json()).toMatchObject({ type: `${DOCS}idempotency-key-invalid` });
      expect((await send('/strict')).status).toBe(200);
      expect(runs).toBe(2);
      // The draft's structured-field string form and the bare token are the same key.
      expect(await (await send('/strict', post('"abc"', 'x'))).text()).toBe('3');
      const replay = await send('/strict', post('abc', 'x'));
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(await replay.text()).toBe('3');
    });

    it('keys per user: the same key of two users runs twice; each user gets their own replay', async () => {
      let runs = 0;
      const app = new Hono();
      app.post('/pay', middleware({ scope: (c) => c.req.header('x-user') }), (c) =>
        c.text(`${c.req.header('x-user')}:${++runs}`),
      );
      const send = await open(app);
      const as = (user: string) => send('/pay', post('k1', '{"amount":5}', { 'x-user': user }));
      expect(await (await as('ann')).text()).toBe('ann:1');
      expect(await (await as('bob')).text()).toBe('bob:2');
      expect(await (await as('ann')).text()).toBe('ann:1');
      expect(await (await as('bob')).text()).toBe('bob:2');
      expect(runs).toBe(2);
    });

    it('a 5xx is not recorded, a thrown handler releases the key: a retry runs again', async () => {
      let runs = 0;
      const app = new Hono();
      app.onError((err, c) =>
        err instanceof HTTPException ? err.getResponse() : c.text(`failed: ${err.message}`, 500),
      );
      app.post('/flaky', middleware(), (c) => {
        runs++;
        if (runs === 1) return c.text('try later', 503);
        if (runs === 2) throw new Error('boom');
        return c.text(`done ${runs}`, 201);
      });
      // A thrown HTTPException answers 4xx through Hono's default handling: a throw all the same.
      let checks = 0;
      app.post('/checked', middleware(), (c) => {
        if (++checks === 1) throw new HTTPException(400, { message: 'bad input' });
        return c.text(`checked ${checks}`);
      });
      const send = await open(app);
      const refused = await send('/checked', post('k1', 'x'));
      expect(refused.status).toBe(400);
      expect(await (await send('/checked', post('k1', 'x'))).text()).toBe('checked 2');
      const a = await send('/flaky', post('k1', 'x'));
      expect([a.status, await a.text()]).toEqual([503, 'try later']);
      const b = await send('/flaky', post('k1', 'x'));
      expect([b.status, await b.text()]).toEqual([500, 'failed: boom']);
      const c = await send('/flaky', post('k1', 'x'));
      expect([c.status, await c.text()]).toEqual([201, 'done 3']);
      const d = await send('/flaky', post('k1', 'x'));
      expect([d.status, await d.text(), d.headers.get('idempotent-replayed')]).toEqual([
        201,
        'done 3',
        'true',
      ]);
      expect(runs).toBe(3);
    });

    it('bounds: a body over maxRequestBytes is 413 and never runs; a response over maxResponseBytes is sent, then replayed body-less', async () => {
      let runs = 0;
      const app = new Hono();
      app.post('/upload', middleware({ maxRequestBytes: 16 }), (c) => c.text(String(++runs)));
      app.post('/big', middleware({ maxResponseBytes: 1000 }), (c) =>
        c.text('y'.repeat(1001 + ++runs), 201, { 'x-run': String(runs) }),
      );
      const send = await open(app);
      expect(await (await send('/upload', post('k1', 'x'.repeat(16)))).text()).toBe('1');
      const large = await send('/upload', post('k2', 'x'.repeat(17)));
      expect(large.status).toBe(413);
      expect(large.headers.get('content-type')).toBe('application/problem+json');
      expect(await large.json()).toMatchObject({
        status: 413,
        title: 'Content Too Large',
        type: expect.stringContaining('#idempotent-request-too-large'),
      });
      expect(runs).toBe(1);
      const first = await send('/big', post('k1', 'x'));
      expect([first.status, (await first.text()).length]).toEqual([201, 1003]);
      // Kept as its status and headers: the retry learns how it ended and nothing runs again.
      const again = await send('/big', post('k1', 'x'));
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('idempotent-body')).toBe('omitted');
      expect(again.headers.get('x-run')).toBe('2');
      expect(await again.text()).toBe('');
      expect(runs).toBe(2);
    });

    it('GET and other methods outside `methods` pass untouched, key or not', async () => {
      let runs = 0;
      const app = new Hono();
      app.use('*', middleware({ required: true }));
      app.get('/list', (c) => c.text(String(++runs)));
      app.put('/item', (c) => c.text(String(++runs)));
      const send = await open(app);
      expect(await (await send('/list', { headers: { 'idempotency-key': 'k1' } })).text()).toBe('1');
      expect(await (await send('/list', { headers: { 'idempotency-key': 'k1' } })).text()).toBe('2');
      expect(await (await send('/item', { method: 'PUT', body: 'x' })).text()).toBe('3');
    });
  });
}

describe('hono idempotencyKey options', () => {
  const idempotency = createIdempotency();
  it('refuses an unknown option with a did-you-mean, and bounds out of range', () => {
    expect(() => idempotencyKey({ idempotency, require: true } as never)).toThrow(/required/);
    expect(() => idempotencyKey({ idempotency, maxRequestBytes: 2_000_000 })).toThrow(/`maxRequestBytes`/);
    expect(() => idempotencyKey({ idempotency, maxResponseBytes: -1 })).toThrow(/`maxResponseBytes`/);
    expect(() => idempotencyKey({} as never)).toThrow(/`idempotency`/);
  });
});
