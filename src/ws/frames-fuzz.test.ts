import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertRoundTrip } from '../../test/support/ws-frame-normal.js';
import { WS_CODES } from './errors.js';
import { parseClientFrame, parseServerFrame } from './frames.js';

/**
 * Fuzzed and edge-value frames against an oracle written from docs/ws-protocol.md: parse never
 * throws, returns `ok` exactly for the frames the document calls valid, and every `ok` frame
 * encodes back to an equal one.
 */
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
const [DOC_CLIENT, DOC_SERVER] = [...DOC.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) =>
  (m[1] as string)
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>),
);
const SESSION = 'q8mD2fP0rS1tU4vW6xY9zA';
/** Valid frames to mutate: the document's examples and the shapes they leave out. */
const CLIENT: Record<string, unknown>[] = [
  ...(DOC_CLIENT ?? []),
  { op: 'hello', v: 1, session: SESSION },
  { op: 'ping' },
  { op: 'pong' },
];
const SERVER: Record<string, unknown>[] = [
  ...(DOC_SERVER ?? []),
  { op: 'ack', seq: 2, id: 'b', outcome: 'handled', duplicate: true },
  { op: 'ack', seq: 4, id: 'd', outcome: 'rejected', code: 'HANDLER_FAILED' },
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

/** What must hold of every `ok` parse: the oracle agrees, and encoding gives back an equal frame. */
function assertValidRoundTrip(side: 'client' | 'server', frame: unknown): void {
  expect((side === 'client' ? clientOracle : serverOracle)(frame)).toBe(true);
  assertRoundTrip(side, frame);
}

describe('fuzzed input (fast-check)', () => {
  const both = (input: string | Uint8Array) => {
    for (const side of ['client', 'server'] as const) {
      const r = side === 'client' ? parseClientFrame(input) : parseServerFrame(input);
      if (r.ok) assertValidRoundTrip(side, r.frame);
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
              assertValidRoundTrip(side, r.frame);
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
        if (r.ok) assertValidRoundTrip(side, r.frame);
      }),
      { numRuns: 5000 },
    );
  });
});
