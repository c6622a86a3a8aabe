// onceflow/hono's idempotencyKey with what does not fit a buffered copy: a request outside
// `methods` with a body over the read bound (never read), a streamed response (reaches the client
// as it is written, replayed body-less), and a store that fails while recording (the client still
// gets the handler's response, the failure is reported once).
import { Hono } from 'hono';
import { stream, streamSSE } from 'hono/streaming';
import { describe, expect, it, vi } from 'vitest';
import { idempotencyKey } from '../../src/hono/index.js';
import { createIdempotency, memoryStore } from '../../src/index.js';
import { wrapStore } from '../../src/testing/wrap-store.js';
import { idempotencyHarness, matrix, TRANSPORTS } from './hono-env.js';

const post = (key: string, body: NonNullable<RequestInit['body']>, method = 'POST') => ({
  method,
  headers: { 'idempotency-key': key },
  body,
});

/** A promise and the function that resolves it: how a test tells a streaming handler to go on. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** The first chunk of a body, and the rest of it as text once the test lets the stream end. */
async function firstChunk(res: Response): Promise<{ first: string; rest: () => Promise<string> }> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const step = await reader.read();
  const first = step.done ? '' : decoder.decode(step.value, { stream: true });
  return {
    first,
    rest: async () => {
      let text = '';
      for (;;) {
        const next = await reader.read();
        if (next.done) return text + decoder.decode();
        text += decoder.decode(next.value, { stream: true });
      }
    },
  };
}

for (const [title, transport, binding] of matrix('hono-idempotency-stream')) {
  describe(`hono idempotencyKey, streams and bounds (${title})`, () => {
    const { middleware, open } = idempotencyHarness(transport, binding, 'streams');

    it('a PUT (not in methods) with a key and a 2 MiB body is not read by the middleware: it runs', async () => {
      let runs = 0;
      const app = new Hono();
      app.use('*', middleware());
      app.put('/blob', async (c) => c.text(`${++runs}:${(await c.req.arrayBuffer()).byteLength}`));
      const send = await open(app);
      const big = new Uint8Array(2 * 1024 * 1024).fill(7);
      for (let i = 1; i <= 2; i++) {
        const res = await send('/blob', post('k1', big, 'PUT'));
        expect([res.status, await res.text()]).toEqual([200, `${i}:${big.byteLength}`]);
      }
      // A POST (in methods) with that body is read, and refused over the bound.
      const posted = await send('/blob-post', post('k2', big));
      expect(posted.status).toBe(413);
    });

    it('a retry sent before the first response was read is replayed, never 409', async () => {
      let runs = 0;
      const app = new Hono();
      app.post('/orders', middleware(), (c) => c.json({ order: ++runs }, 201));
      const send = await open(app);
      const first = await send('/orders', post('k1', '{}'));
      const again = await send('/orders', post('k1', '{}'));
      expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
      expect(await again.json()).toEqual({ order: 1 });
      expect(await first.json()).toEqual({ order: 1 });
      expect(runs).toBe(1);
    });

    it("an SSE response's first event reaches the client before the stream ends; a retry is replayed body-less", async () => {
      let runs = 0;
      const release = gate();
      const app = new Hono();
      app.use('*', middleware());
      app.post('/events', (c) =>
        streamSSE(c, async (s) => {
          runs++;
          await s.writeSSE({ event: 'tick', data: 'one' });
          await release.opened;
          await s.writeSSE({ event: 'tick', data: 'two' });
        }),
      );
      const send = await open(app);
      const res = await send('/events', post('k1', '{}'));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      const { first, rest } = await firstChunk(res);
      expect(first).toContain('data: one');
      release.open();
      expect(await rest()).toContain('data: two');
      const again = await send('/events', post('k1', '{}'));
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('idempotent-body')).toBe('omitted');
      expect(again.headers.get('content-type')).toBe('text/event-stream');
      expect(await again.text()).toBe('');
      expect(runs).toBe(1);
    });

    it('a stream() body without headers of its own reaches the client as written; within the bound it is replayed whole', async () => {
      let runs = 0;
      const release = gate();
      const app = new Hono();
      app.post('/export', middleware(), (c) =>
        stream(c, async (s) => {
          runs++;
          await s.write('first,');
          await release.opened;
          await s.write('last');
        }),
      );
      const send = await open(app);
      const res = await send('/export', post('k1', 'x'));
      const { first, rest } = await firstChunk(res);
      expect(first).toBe('first,');
      // Still being written: a repeat now is told so, and does not run it again.
      expect((await send('/export', post('k1', 'x'))).status).toBe(409);
      release.open();
      expect(await rest()).toBe('last');
      const again = await send('/export', post('k1', 'x'));
      expect([again.headers.get('idempotent-replayed'), await again.text()]).toEqual(['true', 'first,last']);
      expect(runs).toBe(1);
    });
  });
}

// Through app.fetch the client's cancel reaches the relayed body itself (over a socket, a small
// body may be written out whole before the server learns the client left).
describe('hono idempotencyKey, a client that stops reading (app.fetch, memory)', () => {
  it('a client that stops reading mid-body: the request is kept body-less, a retry does not run it again', async () => {
    let runs = 0;
    const release = gate();
    const app = new Hono();
    app.post(
      '/export',
      idempotencyKey({ idempotency: createIdempotency({ store: memoryStore(), name: 'export' }) }),
      (c) =>
        stream(c, async (s) => {
          runs++;
          await s.write('first,');
          await release.opened;
          await s.write('never read');
        }),
    );
    const send = (path: string, init: RequestInit) => app.fetch(new Request(`http://localhost${path}`, init));
    const res = await send('/export', post('k1', 'x'));
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await reader.cancel();
    release.open();
    // The record is stored just after the cancel: until then a repeat is 409.
    const again = await vi.waitFor(
      async () => {
        const r = await send('/export', post('k1', 'x'));
        if (r.status === 409) throw new Error('still in progress');
        return r;
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-body')).toBe('omitted');
    expect(await again.text()).toBe('');
    expect(runs).toBe(1);
  });
});

for (const transport of TRANSPORTS) {
  describe(`hono idempotencyKey, a store failing to record (${transport.name})`, () => {
    it("the client gets the handler's 201; onRecordError is told once; nothing else is logged", async () => {
      const base = memoryStore();
      const failing = wrapStore(base, {
        idempotencyComplete: async () => {
          throw new Error('store down');
        },
      });
      const onRecordError = vi.fn();
      const onError = vi.fn();
      const app = new Hono();
      app.onError((err, c) => {
        onError(err);
        return c.text('error handler', 500);
      });
      app.post(
        '/orders',
        idempotencyKey({ idempotency: createIdempotency({ store: failing, name: 'orders' }), onRecordError }),
        (c) => c.json({ order: 1 }, 201, { 'x-handler': 'yes' }),
      );
      const client = await transport.open(app);
      try {
        const res = await client.send('/orders', post('k1', '{"item":"tea"}'));
        expect(res.status).toBe(201);
        expect(res.headers.get('x-handler')).toBe('yes');
        expect(await res.json()).toEqual({ order: 1 });
        expect(onRecordError).toHaveBeenCalledTimes(1);
        expect((onRecordError.mock.calls[0]?.[0] as Error).message).toBe('store down');
        expect(onError).not.toHaveBeenCalled();
      } finally {
        await client.close();
      }
    });
  });
}
