// onceflow/express's idempotencyKey when things go wrong or run odd: a client that goes away while
// its handler runs, a handler that throws after it answered, an error before it answered, a store
// that fails after the handler ran, an encoding header over plain bytes, raw and large bodies.
import express, { type ErrorRequestHandler, type Express } from 'express';
import { describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../src/express/index.js';
import { createIdempotency } from '../../src/idempotency/idempotency.js';
import { memoryStore } from '../../src/store/memory/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { wrapStore } from '../../src/testing/wrap-store.js';
import { listen } from '../support/express-app.js';

function gate() {
  let open: () => void = () => {};
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { open, opened };
}

async function serving<T>(a: Express, body: (url: string) => Promise<T>): Promise<T> {
  const server = await listen(a);
  try {
    return await body(server.url);
  } finally {
    await server.close();
  }
}

const post = (url: string, key: string, body: unknown = { item: 'book' }, signal?: AbortSignal) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });

/** Asks again while the answer is a 409 (the first run's record still being stored). */
async function afterRun(ask: () => Promise<Response>): Promise<Response> {
  for (;;) {
    const res = await ask();
    if (res.status !== 409) return res;
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('idempotencyKey under faults', () => {
  it('keeps the key while the handler of a client gone away still runs, and records its reply', async () => {
    const a = express();
    const release = gate();
    const entered = gate();
    let runs = 0;
    a.use(express.json());
    a.use(idempotencyKey({ idempotency: createIdempotency({ store: memoryStore() }) }));
    a.post('/orders', async (_req, res) => {
      runs++;
      entered.open();
      await release.opened;
      res.status(201).json({ id: `o-${runs}` });
    });
    await serving(a, async (url) => {
      const abort = new AbortController();
      const gone = post(`${url}/orders`, 'k9', undefined, abort.signal).catch(() => 'aborted');
      await entered.opened;
      abort.abort();
      expect(await gone).toBe('aborted');
      // The first handler still runs: a retry must not run beside it.
      expect((await post(`${url}/orders`, 'k9')).status).toBe(409);
      release.open();
      const replay = await afterRun(() => post(`${url}/orders`, 'k9'));
      expect([replay.status, replay.headers.get('idempotent-replayed'), await replay.json()]).toEqual([
        201,
        'true',
        { id: 'o-1' },
      ]);
      expect(runs).toBe(1);
    });
  });

  it('a handler that throws after it answered: the client gets the recorded answer, not the error handler’s', async () => {
    const base = memoryStore();
    const handled = gate();
    // The record is stored only once the error handler has run: its end is held all that time.
    const store = wrapStore(base, {
      idempotencyComplete: async (...args: Parameters<NonNullable<Store['idempotencyComplete']>>) => {
        await handled.opened;
        return (base.idempotencyComplete as NonNullable<Store['idempotencyComplete']>).call(base, ...args);
      },
    });
    const a = express();
    let runs = 0;
    let seenByErrorHandler: unknown[] = [];
    a.use(express.json());
    a.use(idempotencyKey({ idempotency: createIdempotency({ store }) }));
    a.post('/orders', (_req, res) => {
      runs++;
      res.status(201).json({ id: `o-${runs}` });
      throw new Error('after the answer');
    });
    const onError: ErrorRequestHandler = (err, _req, res, _next) => {
      seenByErrorHandler = [String(err.message), res.headersSent, res.writableEnded];
      // As a timeout or a careless error handler would: answer whatever the response says.
      try {
        res.status(500).set('x-error', '1').json({ error: 'internal' });
      } finally {
        handled.open();
      }
    };
    a.use(onError);
    await serving(a, async (url) => {
      const first = await post(`${url}/orders`, 'k1');
      expect([first.status, first.headers.get('x-error'), await first.json()]).toEqual([
        201,
        null,
        { id: 'o-1' },
      ]);
      expect(seenByErrorHandler).toEqual(['after the answer', true, true]);
      const again = await post(`${url}/orders`, 'k1');
      expect([again.status, again.headers.get('idempotent-replayed'), await again.json()]).toEqual([
        201,
        'true',
        { id: 'o-1' },
      ]);
      expect(runs).toBe(1);
    });
  });

  it('never records an error: a throw or next(err) answered 400 by the error handler runs again', async () => {
    const a = express();
    let runs = 0;
    a.use(express.json());
    a.use(idempotencyKey({ idempotency: createIdempotency({ store: memoryStore() }) }));
    a.post('/sync', () => {
      runs++;
      throw Object.assign(new Error('bad input'), { status: 400 });
    });
    a.post('/next', (_req, _res, next) => {
      runs++;
      setImmediate(() => next(Object.assign(new Error('bad input'), { status: 400 })));
    });
    a.post('/async', async () => {
      runs++;
      await new Promise((r) => setImmediate(r));
      throw Object.assign(new Error('bad input'), { status: 422 });
    });
    const onError: ErrorRequestHandler = (err, _req, res, _next) => {
      res.status(err.status).json({ error: err.message });
    };
    a.use(onError);
    await serving(a, async (url) => {
      for (const [path, status] of [
        ['/sync', 400],
        ['/next', 400],
        ['/async', 422],
      ] as const) {
        runs = 0;
        for (let i = 0; i < 2; i++) {
          const res = await post(`${url}${path}`, `e-${path}`);
          expect([res.status, res.headers.get('idempotent-replayed'), await res.json()]).toEqual([
            status,
            null,
            { error: 'bad input' },
          ]);
        }
        expect(runs).toBe(2);
      }
    });
  });

  it('a store failing after the handler ran: the client gets the handler’s 201, onRecordError is told once', async () => {
    const base = memoryStore();
    const store = wrapStore(base, {
      idempotencyComplete: async () => {
        throw new Error('store down');
      },
    });
    const reported: unknown[] = [];
    const a = express();
    a.use(express.json());
    a.use(
      idempotencyKey({
        idempotency: createIdempotency({ store }),
        onRecordError: (err) => reported.push((err as Error).message),
      }),
    );
    a.post('/orders', (_req, res) => {
      res.status(201).json({ id: 'o-1' });
    });
    let fellThrough = 0;
    const onError: ErrorRequestHandler = (err, _req, res, _next) => {
      fellThrough++;
      res.status(500).json({ error: String(err) });
    };
    a.use(onError);
    await serving(a, async (url) => {
      const res = await post(`${url}/orders`, 'k1');
      expect([res.status, await res.json()]).toEqual([201, { id: 'o-1' }]);
      expect(reported).toEqual(['store down']);
      expect(fellThrough).toBe(0);
    });
  });

  it('records no content-encoding: the bytes copied are the ones before any encoding middleware', async () => {
    const a = express();
    a.use(idempotencyKey({ idempotency: createIdempotency({ store: memoryStore() }) }));
    a.post('/text', (_req, res) => {
      // What compression does to the headers, with the plain bytes as this capture sees them.
      res.set('content-encoding', 'gzip').type('text/plain').send('plain bytes');
    });
    await serving(a, async (url) => {
      const first = await fetch(`${url}/text`, { method: 'POST', headers: { 'idempotency-key': 'c1' } });
      expect([first.status, first.headers.get('content-encoding')]).toEqual([200, 'gzip']);
      await first.body?.cancel();
      const again = await fetch(`${url}/text`, { method: 'POST', headers: { 'idempotency-key': 'c1' } });
      expect([
        again.headers.get('idempotent-replayed'),
        again.headers.get('content-encoding'),
        again.headers.get('content-type'),
        await again.text(),
      ]).toEqual(['true', null, 'text/plain; charset=utf-8', 'plain bytes']);
    });
  });

  it('fingerprints a raw (Buffer) body and a JSON body over 1 MiB: both run once and replay', async () => {
    const a = express();
    let runs = 0;
    a.use(express.raw({ type: 'application/octet-stream' }));
    a.use(express.json({ limit: '10mb' }));
    a.use(idempotencyKey({ idempotency: createIdempotency({ store: memoryStore() }) }));
    a.post('/upload', (req, res) => {
      runs++;
      res.status(201).json({
        run: runs,
        bytes: Buffer.isBuffer(req.body) ? req.body.length : JSON.stringify(req.body).length,
      });
    });
    await serving(a, async (url) => {
      const raw = (bytes: Buffer) =>
        fetch(`${url}/upload`, {
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream', 'idempotency-key': 'raw' },
          body: bytes,
        });
      const bytes = Buffer.from(Array.from({ length: 300 }, (_, i) => i % 256));
      const r1 = await raw(bytes);
      expect([r1.status, await r1.json()]).toEqual([201, { run: 1, bytes: 300 }]);
      const r2 = await raw(bytes);
      expect([r2.status, r2.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
      expect((await raw(Buffer.from('other'))).status).toBe(422);

      const big = { text: 'x'.repeat(2 * 1_048_576) };
      const j1 = await post(`${url}/upload`, 'big', big);
      expect([j1.status, ((await j1.json()) as { run: number }).run]).toEqual([201, 2]);
      const j2 = await post(`${url}/upload`, 'big', big);
      expect([
        j2.status,
        j2.headers.get('idempotent-replayed'),
        ((await j2.json()) as { run: number }).run,
      ]).toEqual([201, 'true', 2]);
      expect((await post(`${url}/upload`, 'big', { text: 'y' })).status).toBe(422);
      expect(runs).toBe(2);
    });
  });
});
