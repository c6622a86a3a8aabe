import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalPayload, payloadHash } from './payload-hash.js';
import { jsonSerializer } from './serializer.js';

const roundTrip = (v: unknown) => jsonSerializer.deserialize(jsonSerializer.serialize(v));

describe('jsonSerializer', () => {
  it('bigint, Date and undefined come back as themselves, anywhere in the value', () => {
    expect(roundTrip(2n ** 70n)).toBe(2n ** 70n);
    expect(roundTrip(new Date(5))).toEqual(new Date(5));
    expect(roundTrip(undefined)).toBeUndefined();
    expect(roundTrip({ a: [1n, new Date(0), { b: -3n }], c: null })).toEqual({
      a: [1n, new Date(0), { b: -3n }],
      c: null,
    });
    expect(Number.isNaN((roundTrip(new Date(Number.NaN)) as Date).getTime())).toBe(true);
  });

  it('objects that look like tags are kept as they are (the encoding is injective)', () => {
    const lookalikes = [
      { $t: 'n', v: '1' },
      { $t: 'u' },
      { $$t: 'd', v: 0 },
      { $$$t: 1, t: 2, $: 3 },
      { '': { $t: 'x' } },
      JSON.parse('{"$t":{},"__proto__":[]}'),
    ];
    for (const v of lookalikes) expect(roundTrip(v)).toEqual(v);
  });

  it('reads a tag whose key is spelled with a JSON escape as a tag (text without `"$`)', () => {
    expect(jsonSerializer.deserialize('{"\\u0024t":"n","v":"12"}')).toBe(12n);
    expect(jsonSerializer.deserialize('{"a":{"\\u0024\\u0024t":1}}')).toEqual({ a: { $t: 1 } });
    expect(jsonSerializer.deserialize('{"a":[1,"x$t"],"b":2}')).toEqual({ a: [1, 'x$t'], b: 2 });
  });

  it('any JSON value with bigints and Dates round-trips (property)', () => {
    const leaf = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.bigInt(),
      fc.integer({ min: -8.64e15, max: 8.64e15 }).map((ms) => new Date(ms)),
    );
    const key = fc.oneof(fc.string(), fc.constantFrom('$t', '$$t', 'v', '', '__proto__'));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('node')), fc.dictionary(key, tie('node'))),
    })).node;
    fc.assert(fc.property(value, (v) => void expect(roundTrip(v)).toEqual(v)));
  });

  it('a function or a symbol as the whole value is refused; a corrupt tag is refused', () => {
    expect(() => jsonSerializer.serialize(() => 1)).toThrow(/Expected `value`/);
    expect(() => jsonSerializer.serialize(Symbol('s'))).toThrow(/Expected `value`/);
    expect(() => jsonSerializer.deserialize('{"$t":"?"}')).toThrow(/written by jsonSerializer/);
  });
  it('a cycle is ERR_INVALID_ARGUMENT naming where it closes; shared references and other errors are not cycles', () => {
    const self: Record<string, unknown> = { id: 1 };
    self.self = self;
    const deep: Record<string, unknown> = { list: [1, { up: null }] };
    ((deep.list as unknown[])[1] as Record<string, unknown>).up = deep;
    // An object with a tag-like key is written as a copy: its cycle is still found by the original.
    const tagged: Record<string, unknown> = { $t: 'x' };
    tagged.again = tagged;
    const cases: [unknown, string, string][] = [
      [self, 'value.self', 'value'],
      [deep, 'value.list[1].up', 'value'],
      [{ a: { b: tagged } }, 'value.a.b.again', 'value.a.b'],
      [[self], 'value[0].self', 'value[0]'],
    ];
    for (const [value, path, to] of cases) {
      const err = (() => {
        try {
          jsonSerializer.serialize(value);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', path });
      expect((err as Error).message).toContain(`refers back to \`${to}\``);
    }
    const shared = { x: 1n };
    expect(roundTrip({ a: shared, b: [shared] })).toEqual({ a: { x: 1n }, b: [{ x: 1n }] });
    const own = new Error('toJSON failed');
    expect(() =>
      jsonSerializer.serialize({
        toJSON() {
          throw own;
        },
      }),
    ).toThrow(own);
  });
});

describe('payloadHash', () => {
  it('ignores key order and undefined properties; tells bigint, Date, undefined, numbers and strings apart', () => {
    expect(payloadHash({ a: 1, b: { c: [1, 2] } })).toBe(payloadHash({ b: { c: [1, 2] }, a: 1 }));
    expect(payloadHash({ a: 1, b: undefined })).toBe(payloadHash({ a: 1 }));
    const distinct = [
      1,
      '1',
      1n,
      new Date(1),
      'n1',
      'd1',
      null,
      'null',
      undefined,
      'u',
      [undefined],
      [null],
      [],
      {},
      true,
      'true',
    ];
    expect(new Set(distinct.map(payloadHash)).size).toBe(distinct.length);
    expect(payloadHash('x')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(canonicalPayload({ b: 2n, a: [new Date(3), undefined] })).toBe('{"a":[d3,u],"b":n2}');
  });

  it('refuses what has no canonical form, naming its place', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const cases: [unknown, string][] = [
      [{ a: [1, Number.POSITIVE_INFINITY] }, 'payload.a[1]'],
      [{ s: Symbol('s') }, 'payload.s'],
      [new Set([1]), 'payload'],
      [{ d: new Date(Number.NaN) }, 'payload.d'],
      [cyclic, 'payload.self'],
    ];
    for (const [payload, path] of cases)
      expect(() => payloadHash(payload)).toThrow(expect.objectContaining({ path }));
  });

  it('refuses a payload over LIMITS.payloadBytes of canonical text (UTF-8), and takes one at the bound', () => {
    // 'é' is 2 bytes: 524 287 of them plus two quotes is 1 048 576 bytes.
    expect(() => payloadHash('é'.repeat(524_287))).not.toThrow();
    expect(() => payloadHash('é'.repeat(524_288))).toThrow(/LIMITS\.payloadBytes/);
    // Shared references are not cycles.
    const shared = { x: 1 };
    expect(() => payloadHash([shared, shared])).not.toThrow();
  });
});
