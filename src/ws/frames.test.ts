import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
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

// An oracle written from docs/ws-protocol.md alone (sections 2 and 7), apart from the parser's
// code: the fuzz tests hold the parser to it.
const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const int = (min: number) => (v: unknown) => Number.isSafeInteger(v) && (v as number) >= min;
const intIn = (min: number, max: number) => (v: unknown) => int(min)(v) && (v as number) <= max;
const re = (r: RegExp) => (v: unknown) => typeof v === 'string' && r.test(v);
const bytes = (min: number, max: number) => (v: unknown) =>
  typeof v === 'string' && v.length >= min && new TextEncoder().encode(v).length <= max;
const isId = re(/^[A-Za-z0-9._:-]{1,128}$/);
const isType = re(/^[A-Za-z][A-Za-z0-9._:-]{0,63}$/);
const isSession = re(/^[A-Za-z0-9_-]{16,64}$/);
const isEpoch = re(/^[A-Za-z0-9_-]{1,64}$/);
function isBody(v: unknown, depth = 0): boolean {
  if (v === null || ['string', 'boolean'].includes(typeof v)) return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (depth >= 32) return false;
  if (Array.isArray(v)) return v.every((x) => isBody(x, depth + 1));
  return isObj(v) && Object.entries(v).every(([k, x]) => k !== '__proto__' && isBody(x, depth + 1));
}
type Spec = Record<string, [(v: unknown) => boolean, boolean?]>; // [check, optional]
function fits(v: unknown, spec: Spec): boolean {
  if (!isObj(v)) return false;
  if (Object.keys(v).some((k) => !Object.hasOwn(spec, k))) return false;
  return Object.entries(spec).every(([k, [check, optional]]) =>
    Object.hasOwn(v, k) ? check(v[k]) : !!optional,
  );
}
const resume = (v: unknown) => fits(v, { offset: [int(0)], epoch: [isEpoch] });
const op = (name: string) => (v: unknown) => v === name;
const CLIENT_SPECS: Record<string, Spec> = {
  hello: {
    op: [op('hello')],
    v: [op(1 as never)],
    session: [isSession],
    token: [bytes(1, 8192), true],
    resume: [resume, true],
  },
  msg: { op: [op('msg')], id: [isId], seq: [int(1)], type: [isType], body: [(v) => isBody(v)] },
  ack: { op: [op('ack')], offset: [int(0)] },
  ping: { op: [op('ping')] },
  pong: { op: [op('pong')] },
};
const ERROR_CODES = Object.keys(WS_CODES).filter((c) => WS_CODES[c as keyof typeof WS_CODES].close !== null);
const SERVER_SPECS: Record<string, Spec> = {
  welcome: {
    op: [op('welcome')],
    v: [op(1 as never)],
    user: [bytes(1, 256)],
    session: [isSession],
    continued: [(v) => typeof v === 'boolean'],
    seq: [int(0)],
    epoch: [isEpoch],
    offset: [int(0)],
    recovered: [(v) => typeof v === 'boolean'],
    limits: [
      (v) =>
        fits(v, {
          maxFrameBytes: [intIn(1024, 65_536)],
          maxInFlight: [intIn(1, 1024)],
          heartbeatMs: [intIn(1000, 600_000)],
          sessionTtlMs: [intIn(1000, 604_800_000)],
        }),
    ],
  },
  msg: { op: [op('msg')], offset: [int(1)], epoch: [isEpoch], type: [isType], body: [(v) => isBody(v)] },
  ack: {
    op: [op('ack')],
    seq: [int(1)],
    id: [isId],
    outcome: [(v) => ['handled', 'limited', 'rejected'].includes(v as string)],
    duplicate: [op(true as never), true],
    code: [(v) => typeof v === 'string', true],
    retryAfterMs: [int(0), true],
  },
  error: {
    op: [op('error')],
    code: [(v) => ERROR_CODES.includes(v as string)],
    message: [bytes(0, 1024)],
    seq: [int(1), true],
    id: [isId, true],
    resume: [resume, true],
    retryAfterMs: [int(0), true],
  },
  ping: { op: [op('ping')] },
  pong: { op: [op('pong')] },
};
function specOf(specs: Record<string, Spec>, v: unknown): Spec | undefined {
  return isObj(v) && typeof v.op === 'string' && Object.hasOwn(specs, v.op) ? specs[v.op] : undefined;
}
function clientOracle(v: unknown): boolean {
  const spec = specOf(CLIENT_SPECS, v);
  return spec !== undefined && fits(v, spec);
}
function serverOracle(v: unknown): boolean {
  const spec = specOf(SERVER_SPECS, v);
  if (spec === undefined || !fits(v, spec)) return false;
  if (!isObj(v) || v.op !== 'ack') return true;
  if (v.outcome === 'handled') return v.code === undefined && v.retryAfterMs === undefined;
  if (v.outcome === 'limited') return v.code === 'RATE_LIMITED' && v.retryAfterMs !== undefined;
  return (
    ['UNKNOWN_TYPE', 'BODY_REFUSED', 'HANDLER_FAILED'].includes(v.code as string) &&
    v.retryAfterMs === undefined
  );
}

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

/** Values at and beside every bound of docs/ws-protocol.md section 7, and of each charset. */
const EDGES: unknown[] = [
  ...[0, -1, 1, 1.5, -0, 2 ** 53, 2 ** 53 - 1, 999, 1000, 1023, 1024, 1025, 65_536, 65_537],
  ...[
    600_000,
    600_001,
    604_800_000,
    604_800_001,
    true,
    false,
    null,
    {},
    [],
    '',
    'e',
    'a b',
    '1x',
    'é',
    'a/b',
  ],
  ...[8192, 8193, 16, 15, 64, 65, 128, 129, 256, 257, 1024, 1025].map((n) => 'x'.repeat(n)),
  ...['é'.repeat(128), 'é'.repeat(129), 'é'.repeat(512), 'é'.repeat(513)],
  ...['handled', 'limited', 'rejected', 'RATE_LIMITED', 'UNKNOWN_TYPE', 'DRAINING', 'NOPE', 'msg', 'hello'],
  { offset: 1, epoch: 'e' },
  { offset: 1, epoch: 'e', x: 1 },
  { maxFrameBytes: 65_536, maxInFlight: 64, heartbeatMs: 25_000, sessionTtlMs: 600_000 },
];

/** `value` with every -0 made 0: JSON writes -0 as 0, the one change a round trip may make. */
function normal(value: unknown): unknown {
  if (typeof value === 'number') return value === 0 ? 0 : value;
  if (Array.isArray(value)) return value.map(normal);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      Object.defineProperty(out, k, { value: normal(v), enumerable: true });
    return out;
  }
  return value;
}

/** What must hold of every `ok` parse: the oracle agrees, and encoding gives back an equal frame. */
function assertRoundTrip(side: 'client' | 'server', frame: unknown): void {
  const encode = side === 'client' ? encodeClientFrame : encodeServerFrame;
  const parse = side === 'client' ? parseClientFrame : parseServerFrame;
  expect((side === 'client' ? clientOracle : serverOracle)(frame)).toBe(true);
  const text = encode(frame as never);
  const again = parse(text);
  expect(again.ok).toBe(true);
  if (again.ok) {
    expect(normal(again.frame)).toEqual(normal(frame));
    expect(encode(again.frame as never)).toBe(text);
  }
}

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

describe('fuzzed input (fast-check)', () => {
  const both = (input: string | Uint8Array) => {
    for (const side of ['client', 'server'] as const) {
      const r = side === 'client' ? parseClientFrame(input) : parseServerFrame(input);
      if (r.ok) assertRoundTrip(side, r.frame);
      else expect(Object.hasOwn(WS_CODES, r.code)).toBe(true);
    }
  };

  it('arbitrary strings and bytes: never a throw; any ok is a valid frame that round-trips', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), both), { numRuns: 2000 });
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), both), { numRuns: 1000 });
  });

  it('arbitrary JSON values: never a throw; any ok is a valid frame that round-trips', () => {
    fc.assert(fc.property(fc.json({ maxDepth: 5 }), both), { numRuns: 2000 });
    const framey = fc.record(
      {
        op: fc.constantFrom('hello', 'msg', 'ack', 'ping', 'pong', 'welcome', 'error'),
        seq: fc.jsonValue(),
        v: fc.jsonValue(),
      },
      { requiredKeys: ['op'] },
    );
    fc.assert(
      fc.property(framey, (f) => both(JSON.stringify(f))),
      { numRuns: 1000 },
    );
  });

  it('every field of every valid frame (nested ones too) set to each edge value: ok exactly when the oracle says valid', () => {
    let oks = 0;
    for (const [side, frames] of [
      ['client', CLIENT],
      ['server', SERVER],
    ] as const) {
      const parse = side === 'client' ? parseClientFrame : parseServerFrame;
      const oracle = side === 'client' ? clientOracle : serverOracle;
      for (const frame of frames) {
        const paths: string[][] = [];
        for (const [k, v] of Object.entries(frame)) {
          paths.push([k]);
          if (isObj(v)) for (const sub of Object.keys(v)) paths.push([k, sub]);
        }
        for (const path of paths) {
          for (const edge of EDGES) {
            const copy: Record<string, unknown> = JSON.parse(JSON.stringify(frame));
            const parent = path.length === 2 ? (copy[path[0] as string] as Record<string, unknown>) : copy;
            parent[path[path.length - 1] as string] = edge;
            const r = parse(JSON.stringify(copy));
            const expected = oracle(JSON.parse(JSON.stringify(copy)));
            if (r.ok !== expected) expect({ side, path, edge, got: r }).toBe(`ok: ${expected}`);
            if (r.ok) {
              oks++;
              assertRoundTrip(side, r.frame);
            }
          }
        }
      }
    }
    expect(oks).toBeGreaterThan(100); // the edges include valid values, so the ok branch is tested
  });

  it('mutated valid frames: never a throw; ok exactly when the oracle says valid', () => {
    // Values at and beside every bound, next to arbitrary JSON.
    const edgy = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(...EDGES));
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('drop' as const), key: fc.nat() }),
      fc.record({ kind: fc.constant('set' as const), key: fc.nat(), value: edgy }),
      fc.record({ kind: fc.constant('nested' as const), key: fc.nat(), sub: fc.nat(), value: edgy }),
      fc.record({
        kind: fc.constant('add' as const),
        key: fc.string({ maxLength: 10 }),
        value: fc.jsonValue({ maxDepth: 2 }),
      }),
      fc.record({
        kind: fc.constant('text' as const),
        at: fc.nat(),
        insert: fc.string({ unit: 'binary', maxLength: 3 }),
      }),
    );
    const frames = fc.oneof(
      fc.constantFrom(...CLIENT).map((f) => ['client', f] as const),
      fc.constantFrom(...SERVER).map((f) => ['server', f] as const),
    );
    fc.assert(
      fc.property(frames, mutation, ([side, frame], m) => {
        const parse = side === 'client' ? parseClientFrame : parseServerFrame;
        const oracle = side === 'client' ? clientOracle : serverOracle;
        let text: string;
        if (m.kind === 'text') {
          const base = JSON.stringify(frame);
          const at = m.at % (base.length + 1);
          text = base.slice(0, at) + m.insert + base.slice(at);
        } else {
          const copy: Record<string, unknown> = JSON.parse(JSON.stringify(frame));
          const keys = Object.keys(copy);
          const key = m.kind === 'add' ? m.key : (keys[m.key % keys.length] as string);
          if (m.kind === 'nested') {
            // A field of a nested object (`resume`, `limits`), or a top-level one when none is.
            const inner = copy[key];
            const target = isObj(inner) ? inner : copy;
            const innerKeys = Object.keys(target);
            target[innerKeys[m.sub % innerKeys.length] as string] = m.value;
          } else if (m.kind === 'drop') delete copy[key];
          else
            Object.defineProperty(copy, key, {
              value: m.value,
              enumerable: true,
              configurable: true,
              writable: true,
            });
          text = JSON.stringify(copy);
        }
        const r = parse(text);
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        expect(r.ok).toBe(parsed !== undefined && oracle(parsed));
        if (r.ok) assertRoundTrip(side, r.frame);
      }),
      { numRuns: 5000 },
    );
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
