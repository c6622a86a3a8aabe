import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { StoreError } from '../core/errors.js';
import { createIdempotency } from '../idempotency/idempotency.js';
import { memoryStore } from '../store/memory/memory-store.js';
import { wrapStore } from '../testing/wrap-store.js';
import { httpIdempotency, parseKey, recordedHeader } from './idempotency-key.js';
import type { HttpRequestInfo, RecordedResponse } from './request.js';

const info = (method: string, headers: Record<string, string> = {}, url = '/orders'): HttpRequestInfo => ({
  method,
  url,
  ip: '10.0.0.1',
  header: (name) => headers[name.toLowerCase()],
});
const response = (status: number, body = 'ok'): RecordedResponse => ({
  status,
  headers: [['content-type', 'text/plain']],
  body: Buffer.from(body).toString('base64'),
});

describe('httpIdempotency', () => {
  it('runs the first request, replays the repeat, and 422s the same key with another body', async () => {
    const core = httpIdempotency<{ user: string }>({ idempotency: createIdempotency() });
    let runs = 0;
    const run = async () => response(201, `order ${++runs}`);
    const req = info('POST', { 'idempotency-key': '"k-1"' });
    expect(await core.handle({ user: 'a' }, req, { n: 1 }, run)).toEqual({
      kind: 'executed',
      recorded: true,
    });
    expect(await core.handle({ user: 'a' }, req, { n: 1 }, run)).toEqual({
      kind: 'replay',
      response: response(201, 'order 1'),
    });
    const reused = await core.handle({ user: 'a' }, req, { n: 2 }, run);
    expect(reused).toMatchObject({ kind: 'answer', answer: { status: 422 } });
    expect(runs).toBe(1);
  });

  it('answers 409 with Retry-After while the first request runs', async () => {
    const core = httpIdempotency({ idempotency: createIdempotency({ lease: '10s' }) });
    const req = info('POST', { 'idempotency-key': 'k' });
    let finish: (r: RecordedResponse) => void = () => {};
    const first = core.handle({}, req, undefined, () => new Promise((r) => (finish = r)));
    await new Promise((r) => setTimeout(r, 5));
    const second = await core.handle({}, req, undefined, async () => response(200));
    expect(second).toMatchObject({ kind: 'answer', answer: { status: 409 } });
    if (second.kind !== 'answer') throw new Error('unreachable');
    expect(Number(second.answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(second.answer.body)).toMatchObject({
      status: 409,
      type: expect.stringContaining('#idempotency-key-in-use'),
    });
    finish(response(200));
    expect(await first).toEqual({ kind: 'executed', recorded: true });
  });

  it('passes other methods and keyless requests, refuses them when required, refuses a bad key', async () => {
    const core = httpIdempotency({ idempotency: createIdempotency() });
    const never = async (): Promise<RecordedResponse> => {
      throw new Error('must not run');
    };
    expect(await core.handle({}, info('GET', { 'idempotency-key': 'k' }), undefined, never)).toEqual({
      kind: 'pass',
    });
    expect(await core.handle({}, info('POST'), undefined, never)).toEqual({ kind: 'pass' });
    const strict = httpIdempotency({ idempotency: createIdempotency(), required: true, methods: ['put'] });
    expect(await strict.handle({}, info('PUT'), undefined, never)).toMatchObject({ answer: { status: 400 } });
    for (const bad of ['', '"', 'a b', 'x'.repeat(256), '"unterminated'])
      expect(
        await strict.handle({}, info('PUT', { 'idempotency-key': bad }), undefined, never),
      ).toMatchObject({
        answer: { status: 400 },
      });
  });

  it('keeps scopes apart: the same key of two users runs twice', async () => {
    const core = httpIdempotency<{ user: string }>({
      idempotency: createIdempotency(),
      scope: (r) => r.user,
    });
    const req = info('POST', { 'idempotency-key': 'same' });
    let runs = 0;
    const run = async () => response(200, String(++runs));
    expect(await core.handle({ user: 'a' }, req, {}, run)).toMatchObject({ kind: 'executed' });
    expect(await core.handle({ user: 'b' }, req, {}, run)).toMatchObject({ kind: 'executed' });
    expect(await core.handle({ user: 'a' }, req, {}, run)).toMatchObject({ kind: 'replay' });
    expect(runs).toBe(2);
  });

  it('does not record a 5xx (the retry runs again); a handler error releases the key', async () => {
    const core = httpIdempotency({ idempotency: createIdempotency() });
    const req = info('POST', { 'idempotency-key': 'k' });
    expect(await core.handle({}, req, {}, async () => response(503))).toEqual({
      kind: 'executed',
      recorded: false,
    });
    const boom = new Error('handler failed');
    await expect(
      core.handle({}, req, {}, async () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await core.handle({}, req, {}, async () => response(200))).toEqual({
      kind: 'executed',
      recorded: true,
    });
  });

  it('keeps a response too large (or streamed) as its status and headers: a retry is told, never run again', async () => {
    const core = httpIdempotency({ idempotency: createIdempotency({ maxResultBytes: 1024 }) });
    let runs = 0;
    const big = async () => {
      runs++;
      return response(201, 'x'.repeat(2000));
    };
    const req = info('POST', { 'idempotency-key': 'big' });
    expect(await core.handle({}, req, {}, big)).toEqual({ kind: 'executed', recorded: true });
    const again = await core.handle({}, req, {}, big);
    expect(again).toEqual({
      kind: 'replay',
      response: {
        status: 201,
        headers: [
          ['content-type', 'text/plain'],
          ['idempotent-body', 'omitted'],
        ],
        body: '',
        omitted: true,
      },
    });
    expect(runs).toBe(1);
    // An adapter that could not copy the body says so itself.
    const streamed = info('POST', { 'idempotency-key': 'stream' });
    await core.handle({}, streamed, {}, async () => ({ ...response(200), body: '', omitted: true }));
    expect(await core.handle({}, streamed, {}, big)).toMatchObject({
      kind: 'replay',
      response: { status: 200, omitted: true },
    });
  });

  it('keeps the status alone when even the headers are over the record bound', async () => {
    const reported: unknown[] = [];
    const core = httpIdempotency({
      idempotency: createIdempotency({ maxResultBytes: 160 }),
      onRecordError: (err) => reported.push(err),
    });
    const req = info('POST', { 'idempotency-key': 'h' });
    const wide = async (): Promise<RecordedResponse> => ({
      status: 201,
      headers: [['link', 'x'.repeat(300)]],
      body: '',
    });
    expect(await core.handle({}, req, {}, wide)).toEqual({ kind: 'executed', recorded: true });
    expect(await core.handle({}, req, {}, wide)).toMatchObject({
      kind: 'replay',
      response: { status: 201, headers: [['idempotent-body', 'omitted']], omitted: true },
    });
    expect(reported).toEqual([]);
  });

  it('reports a store failure after the handler ran (the client keeps its response); before it, the error is thrown', async () => {
    const store = memoryStore();
    const failing = wrapStore(store, {
      idempotencyComplete: () => Promise.reject(new StoreError('idempotencyComplete', new Error('down'))),
    });
    const reported: unknown[] = [];
    const core = httpIdempotency({
      idempotency: createIdempotency({ store: failing }),
      onRecordError: (err) => reported.push(err),
    });
    const req = info('POST', { 'idempotency-key': 'k' });
    expect(await core.handle({}, req, {}, async () => response(201))).toEqual({
      kind: 'executed',
      recorded: false,
    });
    expect(reported).toHaveLength(1);
    const down = wrapStore(store, {
      idempotencyBegin: () => Promise.reject(new StoreError('idempotencyBegin', new Error('down'))),
    });
    const before = httpIdempotency({ idempotency: createIdempotency({ store: down }) });
    let ran = false;
    await expect(
      before.handle({}, info('POST', { 'idempotency-key': 'k2' }), {}, async () => {
        ran = true;
        return response(201);
      }),
    ).rejects.toMatchObject({ code: 'ERR_STORE' });
    expect(ran).toBe(false);
  });

  it('bounds the scope in UTF-8 bytes', async () => {
    const core = httpIdempotency<{ user: string }>({
      idempotency: createIdempotency(),
      scope: (r) => r.user,
    });
    const req = info('POST', { 'idempotency-key': 'k' });
    const ok = async () => response(200);
    expect(await core.handle({ user: 'é'.repeat(125) }, req, {}, ok)).toMatchObject({ kind: 'executed' });
    await expect(core.handle({ user: 'é'.repeat(126) }, req, {}, ok)).rejects.toMatchObject({
      option: 'scope',
    });
  });

  it('refuses bad options by name', () => {
    expect(thrown(() => httpIdempotency({} as never))).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      option: 'idempotency',
    });
    const idempotency = createIdempotency();
    expect(thrown(() => httpIdempotency({ idempotency, methods: ['PO ST'] }))).toMatchObject({
      option: 'methods[0]',
    });
    expect(thrown(() => httpIdempotency({ idempotency, requird: true } as never))).toMatchObject({
      message: expect.stringContaining('did you mean `required`'),
    });
  });

  it('parses the key as a structured-field string or a bare token; drops per-moment headers', () => {
    expect(parseKey('"a\\"b"')).toBe('a"b');
    expect(parseKey(' 8e03978e-40d5 ')).toBe('8e03978e-40d5');
    expect(parseKey('"é"')).toBeUndefined();
    for (const h of ['Date', 'set-cookie', 'RateLimit', 'X-RateLimit-Remaining', 'Content-Length'])
      expect(recordedHeader(h)).toBe(false);
    for (const h of ['Content-Type', 'location', 'ETag']) expect(recordedHeader(h)).toBe(true);
  });
});
