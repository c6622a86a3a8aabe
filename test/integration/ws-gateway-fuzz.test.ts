// Random bad frames against a running gateway (docs/ws-protocol.md sections 1 and 8): each gets an
// error frame and the close its code documents, before or after the handshake; none changes the
// session's state, crashes the node, or disturbs another open connection.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryStore } from '../../src/index.js';
import { WS_CODES } from '../../src/ws/errors.js';
import { parseClientFrame } from '../../src/ws/frames.js';
import { createGateway, type Gateway } from '../../src/ws/index.js';
import { connectRaw, newSession, open, type RawClient } from '../support/ws-raw-client.js';

const MAX_FRAME = 2048;
let g: Gateway;
let port: number;
const ran: string[] = [];
beforeAll(async () => {
  g = await createGateway({
    port: 0,
    store: memoryStore(),
    maxFrameBytes: MAX_FRAME,
    auth: (t) => t ?? null,
    handlers: { t: (m) => void ran.push(`${m.session}:${m.id}`) },
  });
  port = g.port as number;
});
afterAll(() => g.close({ drain: '200ms' }));

const json = fc.jsonValue({ maxDepth: 3 });
const field = fc.oneof(json, fc.string(), fc.integer(), fc.constant(null), fc.constant(undefined));
const ops = fc.constantFrom('hello', 'msg', 'ack', 'ping', 'pong', 'welcome', 'error', 'nope', '');
/** Objects close to real frames (a known op, some right fields, some wrong or extra). */
const frameLike = fc
  .record(
    {
      op: ops,
      v: fc.oneof(fc.constant(1), field),
      session: fc.oneof(fc.constant('fuzz-session-aaaaaaaa'), field),
      id: fc.oneof(fc.constant('i1'), field),
      seq: fc.oneof(fc.integer({ min: -2, max: 5 }), field),
      type: fc.oneof(fc.constant('t'), field),
      body: json,
      offset: fc.oneof(fc.integer({ min: -1, max: 3 }), field),
      extra: field,
    },
    { requiredKeys: ['op'] },
  )
  .chain((o) =>
    fc.boolean().map((proto) => {
      const text = JSON.stringify(o);
      // A `__proto__` key cannot be made by an object literal: written into the text.
      return proto ? `${text.slice(0, -1)},"__proto__":{}}` : text;
    }),
  );

type Sent = { kind: 'text'; data: string | Buffer } | { kind: 'binary'; data: Buffer };
const sent: fc.Arbitrary<Sent> = fc.oneof(
  frameLike.map((data) => ({ kind: 'text' as const, data })),
  fc.string({ maxLength: 200 }).map((data) => ({ kind: 'text' as const, data })),
  json.map((v) => ({ kind: 'text' as const, data: JSON.stringify(v) ?? 'null' })),
  fc.uint8Array({ maxLength: 64 }).map((b) => ({ kind: 'binary' as const, data: Buffer.from(b) })),
  // Text frames whose bytes are not UTF-8.
  fc
    .uint8Array({ minLength: 1, maxLength: 32 })
    .map((b) => ({
      kind: 'text' as const,
      data: Buffer.concat([Buffer.from('{"op":"'), Buffer.from(b), Buffer.from([0xff])]),
    })),
  // Over the bound, within what `ws` reads whole (twice it; larger frames `ws` cuts with 1009 alone).
  fc
    .integer({ min: MAX_FRAME + 1, max: 2 * MAX_FRAME - 32 })
    .map((n) => ({ kind: 'text' as const, data: `{"op":"ping","x":"${'a'.repeat(n)}"}` })),
);

/** What the gateway must answer: the parser's code, or the protocol's rule for a valid frame. */
function expected(s: Sent, afterHello: boolean): { code: string } | 'ignored' | 'pong' {
  if (s.kind === 'binary') return { code: 'BAD_ENCODING' };
  const parsed = parseClientFrame(s.data, { maxFrameBytes: MAX_FRAME });
  if (!parsed.ok) return { code: parsed.code };
  const op = parsed.frame.op;
  if (op === 'ping') return 'pong';
  if (op === 'pong') return 'ignored';
  if (op === 'hello') return afterHello ? { code: 'UNEXPECTED_FRAME' } : 'ignored';
  if (!afterHello) return { code: 'UNEXPECTED_FRAME' };
  return 'ignored'; // a valid msg or ack: not a bad frame (filtered out below)
}

describe('gateway fuzz', () => {
  it('every bad frame: an error frame and its close; no state change; other connections unaffected', async () => {
    const bystanderSession = newSession('bystander');
    const bystander = await open(port, bystanderSession, { token: 'bystander' });
    let bseq = 0;
    const victimSession = newSession('victim');
    const seed = await open(port, victimSession, { token: 'victim' });
    seed.client.msg(1, 'v1', 't');
    await seed.client.waitFor((f) => f.op === 'ack' && f.seq === 1);
    await seed.client.close();

    await fc.assert(
      fc.asyncProperty(sent, fc.boolean(), async (s, afterHello) => {
        const want = expected(s, afterHello);
        fc.pre(typeof want === 'object');
        const c: RawClient = afterHello
          ? (await open(port, victimSession, { token: 'victim' })).client
          : await connectRaw(port);
        try {
          const from = c.frames.length;
          c.send(s.data, s.kind === 'binary');
          const { close } = await c.failure();
          const error = c.frames.slice(from).find((f) => f.op === 'error');
          expect(error?.code, JSON.stringify(String(s.data).slice(0, 80))).toBe(want.code);
          expect(close.code).toBe(WS_CODES[want.code as keyof typeof WS_CODES].close);
          expect(close.reason).toBe(want.code);
        } finally {
          c.terminate();
        }
        // The session's state is what it was; the bystander still works.
        const check = await open(port, victimSession, { token: 'victim' });
        expect(check.welcome).toMatchObject({ continued: true, seq: 1 });
        check.client.terminate();
        bseq += 1;
        bystander.client.msg(bseq, `b${bseq}`, 't');
        await bystander.client.waitFor((f) => f.op === 'ack' && f.seq === bseq && f.outcome === 'handled');
        await g.publish('bystander', 'n', { bseq });
        await bystander.client.waitFor((f) => f.op === 'msg' && f.body.bseq === bseq);
      }),
      { numRuns: 60 },
    );
    expect(bystander.client.closeInfo).toBeUndefined();
    expect(ran.filter((r) => r.startsWith(victimSession))).toEqual([`${victimSession}:v1`]);
    bystander.client.terminate();
  });

  it('text that is not UTF-8 is BAD_ENCODING with an error frame and close 1008', async () => {
    const { client } = await open(port, newSession(), { token: 'u' });
    client.send(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]));
    const { error, close } = await client.failure();
    expect(error?.code).toBe('BAD_ENCODING');
    expect(close).toEqual({ code: 1008, reason: 'BAD_ENCODING' });
  });

  it('a frame over maxFrameBytes is FRAME_TOO_LARGE (1009) with an error frame', async () => {
    const { client } = await open(port, newSession(), { token: 'u' });
    client.msg(1, 'big', 't', 'x'.repeat(MAX_FRAME));
    const { error, close } = await client.failure();
    expect(error?.code).toBe('FRAME_TOO_LARGE');
    expect(close).toEqual({ code: 1009, reason: 'FRAME_TOO_LARGE' });
  });
});
