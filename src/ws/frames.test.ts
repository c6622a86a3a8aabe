import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assertRoundTrip } from '../../test/support/ws-frame-normal.js';
import { WS_CODES } from './errors.js';
import {
  type ClientFrame,
  encodeClientFrame,
  encodeServerFrame,
  parseClientFrame,
  parseServerFrame,
  type ServerFrame,
} from './frames.js';
import { WS_LIMITS } from './limits.js';

const DOC = readFileSync(new URL('../../docs/ws-protocol.md', import.meta.url), 'utf8');
const SESSION = 'q8mD2fP0rS1tU4vW6xY9zA';
const WELCOME_LIMITS = { maxFrameBytes: 65_536, maxInFlight: 64, heartbeatMs: 25_000, sessionTtlMs: 600_000 };

const CLIENT: ClientFrame[] = [
  { op: 'hello', v: 1, session: SESSION },
  { op: 'hello', v: 1, session: SESSION, token: 't', resume: { offset: 0, epoch: 'e' } },
  { op: 'msg', id: 'a', seq: 1, type: 'chat.send', body: null },
  {
    op: 'msg',
    id: 'x'.repeat(128),
    seq: Number.MAX_SAFE_INTEGER,
    type: 'T:a-b_c.d',
    body: { a: [1, 'é', true, {}] },
  },
  { op: 'ack', offset: 0 },
  { op: 'ping' },
  { op: 'pong' },
];
const SERVER: ServerFrame[] = [
  {
    op: 'welcome',
    v: 1,
    user: 'ü',
    session: SESSION,
    continued: false,
    seq: 0,
    epoch: 'e',
    offset: 0,
    recovered: false,
    limits: WELCOME_LIMITS,
  },
  { op: 'msg', offset: 1, epoch: 'e', type: 'x', body: 'hi' },
  { op: 'ack', seq: 1, id: 'a', outcome: 'handled' },
  { op: 'ack', seq: 2, id: 'b', outcome: 'handled', duplicate: true },
  { op: 'ack', seq: 3, id: 'c', outcome: 'limited', code: 'RATE_LIMITED', retryAfterMs: 0 },
  { op: 'ack', seq: 4, id: 'd', outcome: 'rejected', code: 'HANDLER_FAILED' },
  { op: 'error', code: 'DRAINING', message: '', resume: { offset: 3, epoch: 'e' }, retryAfterMs: 5 },
  { op: 'error', code: 'BAD_SEQ', message: 'seq 3 was given another id', seq: 3, id: 'z' },
  { op: 'ping' },
  { op: 'pong' },
];

describe('valid frames', () => {
  it('round-trip through encode and parse, as strings and as bytes', () => {
    for (const frame of CLIENT) {
      const text = encodeClientFrame(frame);
      expect(parseClientFrame(text)).toEqual({ ok: true, frame });
      expect(parseClientFrame(new TextEncoder().encode(text))).toEqual({ ok: true, frame });
      assertRoundTrip('client', frame);
    }
    for (const frame of SERVER) {
      const text = encodeServerFrame(frame);
      expect(parseServerFrame(text)).toEqual({ ok: true, frame });
      assertRoundTrip('server', frame);
    }
  });

  it("the document's JSON examples are valid frames of their side", () => {
    const [client, server] = [...DOC.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) =>
      (m[1] as string).trim().split('\n'),
    );
    expect(client?.length).toBe(3);
    expect(server?.length).toBe(5);
    for (const line of client ?? []) expect(parseClientFrame(line)).toMatchObject({ ok: true });
    for (const line of server ?? []) expect(parseServerFrame(line)).toMatchObject({ ok: true });
  });
});

describe('invalid frames get their documented code', () => {
  const msg = (over: Record<string, unknown>) =>
    JSON.stringify({ op: 'msg', id: 'a', seq: 1, type: 't', body: 1, ...over });
  const cases: [string, string | Uint8Array, string][] = [
    ['too large', 'x'.repeat(WS_LIMITS.maxFrameBytes + 1), 'FRAME_TOO_LARGE'],
    ['invalid UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), 'BAD_ENCODING'],
    ['not JSON', '{"op":', 'NOT_JSON'],
    ['empty', '', 'NOT_JSON'],
    ['an array', '[]', 'BAD_FRAME'],
    ['a string', '"msg"', 'BAD_FRAME'],
    ['no op', '{}', 'BAD_FRAME'],
    ['unknown op', '{"op":"welcome"}', 'BAD_FRAME'],
    ['op from the prototype', '{"op":"toString"}', 'BAD_FRAME'],
    ['missing field', '{"op":"msg","id":"a","seq":1,"type":"t"}', 'BAD_FRAME'],
    ['null optional', `{"op":"hello","v":1,"session":"${SESSION}","token":null}`, 'BAD_FRAME'],
    ['seq 0', msg({ seq: 0 }), 'BAD_FRAME'],
    ['seq fractional', msg({ seq: 1.5 }), 'BAD_FRAME'],
    ['seq unsafe', msg({ seq: 2 ** 53 }), 'BAD_FRAME'],
    ['seq as string', msg({ seq: '1' }), 'BAD_FRAME'],
    ['id with a space', msg({ id: 'a b' }), 'BAD_FRAME'],
    ['id too long', msg({ id: 'a'.repeat(129) }), 'BAD_FRAME'],
    ['type starting with a digit', msg({ type: '1x' }), 'BAD_FRAME'],
    ['type too long', msg({ type: 'a'.repeat(65) }), 'BAD_FRAME'],
    ['short session', '{"op":"hello","v":1,"session":"abc"}', 'BAD_FRAME'],
    ['unknown field', msg({ priority: 1 }), 'UNKNOWN_FIELD'],
    [
      'unknown field in resume',
      `{"op":"hello","v":1,"session":"${SESSION}","resume":{"offset":1,"epoch":"e","x":1}}`,
      'UNKNOWN_FIELD',
    ],
    ['__proto__ at the top', '{"op":"ping","__proto__":{}}', 'FORBIDDEN_KEY'],
    [
      '__proto__ deep in the body',
      msg({}).replace('"body":1', '"body":{"a":[{"__proto__":{"polluted":1}}]}'),
      'FORBIDDEN_KEY',
    ],
    ['body too deep', msg({ body: JSON.parse(`${'['.repeat(33)}${']'.repeat(33)}`) }), 'TOO_DEEP'],
    ['version 2', `{"op":"hello","v":2,"session":"${SESSION}","newField":1}`, 'BAD_VERSION'],
    ['no version', `{"op":"hello","session":"${SESSION}"}`, 'BAD_VERSION'],
  ];
  for (const [name, input, code] of cases) {
    it(`${name}: ${code}`, () => {
      const r = parseClientFrame(input);
      expect(r).toMatchObject({ ok: false, code });
      if (!r.ok) expect(WS_CODES[r.code].sentAs).toBe('error');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  }

  it('server acks whose outcome and code disagree: BAD_FRAME', () => {
    for (const ack of [
      { outcome: 'handled', code: 'RATE_LIMITED' },
      { outcome: 'handled', retryAfterMs: 1 },
      { outcome: 'limited', code: 'RATE_LIMITED' },
      { outcome: 'limited', code: 'UNKNOWN_TYPE', retryAfterMs: 1 },
      { outcome: 'rejected' },
      { outcome: 'rejected', code: 'RATE_LIMITED' },
      { outcome: 'rejected', code: 'UNKNOWN_TYPE', retryAfterMs: 1 },
      { outcome: 'done' },
    ]) {
      expect(parseServerFrame(JSON.stringify({ op: 'ack', seq: 1, id: 'a', ...ack }))).toMatchObject({
        ok: false,
        code: 'BAD_FRAME',
      });
    }
    expect(parseServerFrame('{"op":"error","code":"RATE_LIMITED","message":""}')).toMatchObject({
      code: 'BAD_FRAME',
    });
    expect(parseServerFrame('{"op":"error","code":"NOPE","message":""}')).toMatchObject({
      code: 'BAD_FRAME',
    });
  });

  it('encoding a frame its peer would refuse throws ERR_INVALID_ARGUMENT and names the problem', () => {
    const bad = {
      op: 'msg',
      id: 'a',
      seq: 1,
      type: 't',
      body: { when: new Date(0) },
    } as unknown as ClientFrame;
    expect(() => encodeClientFrame(bad)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }));
    const undef = { op: 'msg', id: 'a', seq: 1, type: 't', body: [undefined] } as unknown as ClientFrame;
    expect(() => encodeClientFrame(undef)).toThrow(/BAD_FRAME/);
    const big = {
      op: 'msg',
      id: 'a',
      seq: 1,
      type: 't',
      body: 'x'.repeat(WS_LIMITS.maxFrameBytes),
    } as ClientFrame;
    expect(() => encodeClientFrame(big)).toThrow(/65536 UTF-8 bytes/);
  });
});

describe('bounds at the edge', () => {
  /** A msg frame of exactly `bytes` UTF-8 bytes, padded with `unit` (1, 2 or 4 bytes) and ASCII. */
  function frameOf(bytes: number, unit: string): string {
    const empty = msgText('');
    const unitBytes = new TextEncoder().encode(unit).length;
    const room = bytes - empty.length;
    const text = msgText(unit.repeat(Math.floor(room / unitBytes)) + 'x'.repeat(room % unitBytes));
    expect(new TextEncoder().encode(text).length).toBe(bytes);
    return text;
  }
  const msgText = (body: string) => `{"op":"msg","id":"a","seq":1,"type":"t","body":"${body}"}`;

  for (const unit of ['x', 'é', '😀']) {
    it(`frame size ${WS_LIMITS.maxFrameBytes} ± 1 bytes, padded with ${unit}`, () => {
      const max = WS_LIMITS.maxFrameBytes;
      for (const [bytes, ok] of [
        [max - 1, true],
        [max, true],
        [max + 1, false],
      ] as const) {
        const text = frameOf(bytes, unit);
        for (const input of [text, new TextEncoder().encode(text)]) {
          const r = parseClientFrame(input);
          expect(r.ok).toBe(ok);
          if (!r.ok) expect(r.code).toBe('FRAME_TOO_LARGE');
          else expect(encodeClientFrame(r.frame)).toBe(text);
        }
      }
    });
  }

  it('a smaller limit is applied the same way', () => {
    expect(parseClientFrame('{"op":"ping"}', { maxFrameBytes: 13 }).ok).toBe(true);
    expect(parseClientFrame('{"op":"ping"}', { maxFrameBytes: 12 })).toMatchObject({
      code: 'FRAME_TOO_LARGE',
    });
  });

  it(`body depth ${WS_LIMITS.maxBodyDepth} passes, one more is TOO_DEEP (arrays and objects)`, () => {
    const nest = (n: number, open: string, close: string) => `${open.repeat(n)}${close.repeat(n)}`;
    const d = WS_LIMITS.maxBodyDepth;
    const withBody = (body: string) => `{"op":"msg","id":"a","seq":1,"type":"t","body":${body}}`;
    expect(parseClientFrame(withBody(nest(d, '[', ']'))).ok).toBe(true);
    expect(parseClientFrame(withBody(nest(d + 1, '[', ']')))).toMatchObject({ code: 'TOO_DEEP' });
    const objects = (n: number) => `${'{"a":'.repeat(n - 1)}{}${'}'.repeat(n - 1)}`;
    expect(parseClientFrame(withBody(objects(d))).ok).toBe(true);
    expect(parseClientFrame(withBody(objects(d + 1)))).toMatchObject({ code: 'TOO_DEEP' });
    // Far deeper than any stack allows a naive recursion: still an answer, not a throw.
    expect(parseClientFrame(withBody(nest(30_000, '[', ']')))).toMatchObject({ code: 'TOO_DEEP' });
  });
});

describe('the error-code table', () => {
  it('docs/ws-protocol.md lists exactly the codes of WS_CODES, each sent as and closing as the code says', () => {
    const section = DOC.slice(DOC.indexOf('## 8. Error codes'), DOC.indexOf('## 9.'));
    const rows = [...section.matchAll(/^\| `([A-Z_]+)` \| (error|ack) \| (\d{4}|open) \|/gm)].map((m) => ({
      code: m[1] as string,
      sentAs: m[2],
      close: m[3] === 'open' ? null : Number(m[3]),
    }));
    expect(rows.map((r) => r.code).sort()).toEqual(Object.keys(WS_CODES).sort());
    for (const row of rows)
      expect(WS_CODES[row.code as keyof typeof WS_CODES]).toEqual({ sentAs: row.sentAs, close: row.close });
    // Every close code used is explained in the close-code table.
    const closes = DOC.slice(DOC.indexOf('## 6. Close codes'), DOC.indexOf('## 7.'));
    for (const { close } of Object.values(WS_CODES))
      if (close !== null) expect(closes).toContain(`| ${close} |`);
  });
});
