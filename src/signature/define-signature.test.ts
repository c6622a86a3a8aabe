import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { thrown } from '../../test/support/thrown.js';
import { isOnceflowError } from '../core/errors.js';
import { defineSignature, type SignatureSchema } from './define-signature.js';

const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

// ---------------------------------------------------------------------------------------------
// A test-side model of the values a payload stands for, and a decoder of the readable form.
// Injectivity is shown by construction: decode(sign(p)) recovers p's values, so two payloads with
// different values cannot share a signature; and equal values always give the same string.

/** A decimal as mantissa x 10^exponent. */
interface Dec {
  m: bigint;
  e: number;
}

/** The canonical text of a decimal, written independently of the implementation. */
function decText({ m, e }: Dec): string {
  if (m === 0n) return '0';
  const negative = m < 0n;
  let digits = (negative ? -m : m).toString();
  let exp = e;
  while (digits.length > 1 && digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    exp++;
  }
  let body: string;
  if (exp >= 0) body = digits + '0'.repeat(exp);
  else {
    const padded = digits.padStart(-exp + 1, '0');
    body = `${padded.slice(0, exp)}.${padded.slice(exp)}`;
  }
  return negative ? `-${body}` : body;
}

/** Writes a decimal the long way: leading zeros, trailing zeros, a `-0` for zero. */
function decPresentation(d: Dec, leading: number, trailing: number, negZero: boolean): string {
  const canonical = decText(d);
  const negative = canonical.startsWith('-');
  const [int = '', frac = ''] = (negative ? canonical.slice(1) : canonical).split('.');
  const fracOut = frac + '0'.repeat(trailing);
  const sign = negative || (canonical === '0' && negZero) ? '-' : '';
  return `${sign}${'0'.repeat(leading)}${int}${fracOut ? `.${fracOut}` : ''}`;
}

function unescapeValue(value: string): string {
  return value.replace(/%(25|7C)/g, (_all, hex: string) => (hex === '25' ? '%' : '|'));
}

function decode(sig: string, names: readonly string[]): string[] {
  const parts = sig.split('|');
  expect(parts[0]).toBe('v1');
  expect(parts.length).toBe(names.length + 1);
  return names.map((name, i) => {
    const part = parts[i + 1] as string;
    expect(part.startsWith(`${name}=`)).toBe(true);
    const raw = part.slice(name.length + 1);
    // An escaped value holds `%` only as the start of `%25` or `%7C`: the escape is a prefix code.
    expect(raw.replace(/%(25|7C)/g, '')).not.toContain('%');
    return unescapeValue(raw);
  });
}

// Units chosen to collide with the escape scheme: `%`, `|`, `=`, and the letters of `%25`/`%7C`.
const trickyChar = fc.constantFrom(
  'a',
  'b',
  '|',
  '%',
  '=',
  '2',
  '5',
  '7',
  'C',
  'c',
  'é',
  '😀',
  '\u0000',
  ' ',
);
const tricky = fc.oneof(
  fc.string({ unit: trickyChar, maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
);

/** An int value and several ways of writing it. */
const intValue = fc.oneof(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), fc.bigInt({ min: -3n, max: 3n }));
function intPresentations(v: bigint): unknown[] {
  const out: unknown[] = [v, v.toString(), `${v < 0n ? '-' : ''}00${(v < 0n ? -v : v).toString()}`];
  if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) out.push(Number(v));
  if (v === 0n) out.push('-0', '-000', -0);
  return out;
}

const decValue = fc.record({
  m: fc.oneof(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.bigInt({ min: -3n, max: 3n })),
  e: fc.integer({ min: -12, max: 25 }),
});
function decPresentations(d: Dec): unknown[] {
  const canonical = decText(d);
  const out: unknown[] = [
    canonical,
    decPresentation(d, 0, 2, false),
    decPresentation(d, 2, 0, true),
    decPresentation(d, 1, 3, true),
  ];
  // A JS number prints with an exponent beyond 1e21 and below 1e-6; up to 15 significant digits it
  // prints exactly the canonical digits, so it must encode like the string.
  const significant = canonical.replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  if (significant.length <= 15) out.push(Number(canonical));
  if (!canonical.includes('.')) out.push(BigInt(canonical));
  return out;
}

const allTypes: SignatureSchema = [
  ['s', 'string'],
  ['t', 'string'],
  ['n', 'int'],
  ['d', 'decimal'],
  ['f', 'bool'],
];
const names = allTypes.map(([name]) => name);

const values = fc.record({ s: tricky, t: tricky, n: intValue, d: decValue, f: fc.boolean() });
type Values = typeof values extends fc.Arbitrary<infer V> ? V : never;
const presentation = fc.record({ n: fc.nat(), d: fc.nat(), order: fc.boolean() });

function toPayload(v: Values, how: { n: number; d: number; order: boolean }): Record<string, unknown> {
  const ints = intPresentations(v.n);
  const decs = decPresentations(v.d);
  const entries: [string, unknown][] = [
    ['s', v.s],
    ['t', v.t],
    ['n', ints[how.n % ints.length]],
    ['d', decs[how.d % decs.length]],
    ['f', v.f],
    ['extra', how.n], // not in the schema: ignored
  ];
  if (how.order) entries.reverse();
  return Object.fromEntries(entries);
}

function canonicalValues(v: Values): string[] {
  return [v.s, v.t, v.n.toString(), decText(v.d), String(v.f)];
}

describe('defineSignature: readable form', () => {
  it('gives the documented settlement signature (the TSDoc example)', () => {
    expect(settlement({ room: 'lobby-7', round: 42, net: -300, final: true })).toBe(
      'v1|room=lobby-7|round=42|net=-300|final=true',
    );
    expect(settlement.version).toBe('v1');
    expect(settlement.schema).toEqual([
      ['room', 'string'],
      ['round', 'int'],
      ['net', 'int'],
      ['final', 'bool'],
    ]);
    expect(Object.isFrozen(settlement.schema)).toBe(true);
  });

  it('escapes separators so ("a|b","c") and ("a","b|c") differ', () => {
    const pair = defineSignature([
      ['x', 'string'],
      ['y', 'string'],
    ]);
    const left = pair({ x: 'a|b', y: 'c' });
    const right = pair({ x: 'a', y: 'b|c' });
    expect(left).toBe('v1|x=a%7Cb|y=c');
    expect(right).toBe('v1|x=a|y=b%7Cc');
    expect(left).not.toBe(right);
    // A literal `%7C` is not an escaped `|`; `=` needs no escape because names cannot hold it.
    expect(pair({ x: '%7C', y: '' })).toBe('v1|x=%257C|y=');
    expect(pair({ x: '|', y: '' })).not.toBe(pair({ x: '%7C', y: '' }));
    expect(pair({ x: 'a|y=b', y: 'c' })).not.toBe(pair({ x: 'a', y: 'b|y=c' }));
    expect(pair({ x: 'k=v', y: '=' })).toBe('v1|x=k=v|y==');
  });

  it('is injective: different values never share a signature, equal values always do (property)', () => {
    const sign = defineSignature(allTypes);
    fc.assert(
      fc.property(values, values, fc.boolean(), presentation, presentation, (a, b0, same, howA, howB) => {
        const b = same ? a : b0;
        const sa = sign(toPayload(a, howA));
        const sb = sign(toPayload(b, howB));
        const equalValues = JSON.stringify(canonicalValues(a)) === JSON.stringify(canonicalValues(b));
        expect(sa === sb).toBe(equalValues);
      }),
      { numRuns: 1000 },
    );
  });

  it('can be decoded back to the canonical values (a left inverse, so injective)', () => {
    const sign = defineSignature(allTypes);
    fc.assert(
      fc.property(values, presentation, (v, how) => {
        expect(decode(sign(toPayload(v, how)), names)).toEqual(canonicalValues(v));
      }),
      { numRuns: 500 },
    );
  });

  it('does not depend on the payload key order', () => {
    expect(settlement({ final: true, net: -300, round: 42, room: 'lobby-7' })).toBe(
      settlement({ room: 'lobby-7', round: 42, net: -300, final: true }),
    );
  });

  it('follows the schema order, which is part of the encoding', () => {
    const ab = defineSignature([
      ['a', 'int'],
      ['b', 'int'],
    ]);
    const ba = defineSignature([
      ['b', 'int'],
      ['a', 'int'],
    ]);
    expect(ab({ a: 1, b: 2 })).toBe('v1|a=1|b=2');
    expect(ba({ a: 1, b: 2 })).toBe('v1|b=2|a=1');
  });

  it('ignores payload fields outside the schema', () => {
    expect(settlement({ room: 'r', round: 1, net: 0, final: false, ts: Date.now() })).toBe(
      'v1|room=r|round=1|net=0|final=false',
    );
  });

  it('writes ints in canonical decimal form', () => {
    const one = defineSignature([['n', 'int']]);
    const cases: [unknown, string][] = [
      [7, '7'],
      [7n, '7'],
      ['007', '7'],
      ['-007', '-7'],
      ['-0', '0'],
      ['-000', '0'],
      [-0, '0'],
      [0n, '0'],
      [Number.MAX_SAFE_INTEGER, '9007199254740991'],
      [Number.MIN_SAFE_INTEGER, '-9007199254740991'],
      [2n ** 64n, '18446744073709551616'],
      ['-000123456789012345678901234567890', '-123456789012345678901234567890'],
      [`${'9'.repeat(60)}`, '9'.repeat(60)],
    ];
    for (const [input, text] of cases) expect(one({ n: input })).toBe(`v1|n=${text}`);
  });

  it('writes decimals without trailing zeros, -0 or exponent', () => {
    const one = defineSignature([['d', 'decimal']]);
    const cases: [unknown, string][] = [
      ['12.500', '12.5'],
      ['-0.00', '0'],
      ['-0', '0'],
      [-0, '0'],
      ['0.0', '0'],
      ['100', '100'],
      ['100.000', '100'],
      ['007.10', '7.1'],
      ['-0.000001', '-0.000001'],
      ['123456789.123456789', '123456789.123456789'],
      [1e-7, '0.0000001'],
      [-1.5e-7, '-0.00000015'],
      [1.5e21, '1500000000000000000000'],
      [1e21, '1000000000000000000000'],
      [-12.5, '-12.5'],
      [0.1, '0.1'],
      [100, '100'],
      [-100n, '-100'],
      [10n ** 30n, `1${'0'.repeat(30)}`],
    ];
    for (const [input, text] of cases) expect(one({ d: input }), String(input)).toBe(`v1|d=${text}`);
  });

  it('writes bools as true/false', () => {
    const one = defineSignature([['f', 'bool']]);
    expect(one({ f: true })).toBe('v1|f=true');
    expect(one({ f: false })).toBe('v1|f=false');
  });

  it('keeps unicode as it is (no normalisation: different strings stay different)', () => {
    const one = defineSignature([['s', 'string']]);
    expect(one({ s: '房间 🎲' })).toBe('v1|s=房间 🎲');
    expect(one({ s: 'é' })).not.toBe(one({ s: 'e\u0301' }));
    expect(one({ s: '' })).toBe('v1|s=');
  });
});

describe('defineSignature: invalid payloads', () => {
  const wrong: [string, Record<string, unknown>][] = [
    ['round', { room: 'r', net: 0, final: true }],
    ['room', { round: 1, net: 0, final: true }],
    ['final', { room: 'r', round: 1, net: 0 }],
    ['round', { room: 'r', round: 1.5, net: 0, final: true }],
    ['round', { room: 'r', round: Number.NaN, net: 0, final: true }],
    ['round', { room: 'r', round: 'abc', net: 0, final: true }],
    ['round', { room: 'r', round: '1e3', net: 0, final: true }],
    ['round', { room: 'r', round: ' 7', net: 0, final: true }],
    ['round', { room: 'r', round: '+7', net: 0, final: true }],
    ['round', { room: 'r', round: '', net: 0, final: true }],
    ['round', { room: 'r', round: 2 ** 53, net: 0, final: true }],
    ['round', { room: 'r', round: Number.POSITIVE_INFINITY, net: 0, final: true }],
    ['round', { room: 'r', round: null, net: 0, final: true }],
    ['net', { room: 'r', round: 1, net: true, final: true }],
    ['final', { room: 'r', round: 1, net: 0, final: 'true' }],
    ['final', { room: 'r', round: 1, net: 0, final: 1 }],
    ['room', { room: 5, round: 1, net: 0, final: true }],
    ['room', { room: null, round: 1, net: 0, final: true }],
    // A lone surrogate has no UTF-8 form; hashed (or stored as UTF-8) it would equal U+FFFD.
    ['room', { room: 'a\uD800', round: 1, net: 0, final: true }],
    ['room', { room: '\uDC00b', round: 1, net: 0, final: true }],
  ];
  it.each(wrong)('throws ERR_INVALID_ARGUMENT naming payload.%s', (field, payload) => {
    const err = thrown(() => settlement(payload));
    expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
    expect((err as Error).message).toMatch(new RegExp(`^Expected \`payload\\.${field}\` to be `));
    expect((err as { path: string }).path).toBe(`payload.${field}`);
  });

  it.each([
    '1e3',
    '1.5e-7',
    '.5',
    '5.',
    '1,5',
    'abc',
    '',
    '+1',
    Number.NaN,
    Number.POSITIVE_INFINITY,
    true,
    null,
  ])('rejects %s as a decimal', (value) => {
    const one = defineSignature([['price', 'decimal']]);
    expect(() => one({ price: value })).toThrow(/^Expected `payload\.price` to be a decimal/);
  });

  it('rejects a payload that is not an object', () => {
    for (const payload of [null, 'x', 5, undefined]) {
      const err = thrown(() => settlement(payload as never));
      expect(isOnceflowError(err, 'ERR_INVALID_ARGUMENT')).toBe(true);
      expect((err as { path: string }).path).toBe('payload');
    }
  });

  it('accepts well-formed astral characters (surrogate pairs)', () => {
    expect(settlement({ room: '😀', round: 1, net: 0, final: true })).toBe(
      'v1|room=😀|round=1|net=0|final=true',
    );
  });
});

describe('defineSignature: invalid schemas', () => {
  const bad: [string, unknown, unknown?][] = [
    ['schema', []],
    ['schema', 'room:string'],
    ['schema', null],
    ['schema[0]', [['room']]],
    ['schema[0]', ['room']],
    [
      'schema[1]',
      [
        ['a', 'int'],
        ['b', 'int', 'x'],
      ],
    ],
    ['schema[0][0]', [['a|b', 'string']]],
    ['schema[0][0]', [['a=b', 'string']]],
    ['schema[0][0]', [['a%b', 'string']]],
    ['schema[0][0]', [['', 'string']]],
    ['schema[0][0]', [['1a', 'string']]],
    ['schema[0][0]', [[7, 'string']]],
    [
      'schema[1][0]',
      [
        ['a', 'int'],
        ['a', 'string'],
      ],
    ],
    ['schema[0][1]', [['a', 'float']]],
    ['schema[0][1]', [['a', 'number']]],
    ['hash', [['a', 'int']], { hash: 'yes' }],
    ['options', [['a', 'int']], null],
    ['options', [['a', 'int']], 'hash'],
  ];
  it.each(bad)('throws ERR_INVALID_OPTION naming `%s`', (option, schema, options) => {
    const err = thrown(() => defineSignature(schema as SignatureSchema, options as never));
    expect(isOnceflowError(err, 'ERR_INVALID_OPTION')).toBe(true);
    expect((err as Error).message.startsWith(`Expected \`${option}\` to be `)).toBe(true);
  });

  it('accepts names with letters, digits, `_`, `.` and `-`', () => {
    const sign = defineSignature([
      ['user.id', 'int'],
      ['sku-code', 'string'],
      ['_flag', 'bool'],
    ]);
    expect(sign({ 'user.id': 1, 'sku-code': 'x', _flag: false })).toBe('v1|user.id=1|sku-code=x|_flag=false');
  });
});

describe('defineSignature: hash form', () => {
  const hashed = defineSignature(settlement.schema, { hash: true });
  const sha = (text: string) => `v1h:${createHash('sha256').update(text, 'utf8').digest('base64url')}`;

  it('is `v1h:` + sha256 of the readable form, base64url without padding', () => {
    const payload = { room: 'lobby-7', round: 42, net: -300, final: true };
    expect(hashed(payload)).toBe(sha('v1|room=lobby-7|round=42|net=-300|final=true'));
    expect(hashed.version).toBe('v1h');
    expect(hashed(payload)).toMatch(/^v1h:[A-Za-z0-9_-]{43}$/);
  });

  it('has a fixed length, equals sha256 of the readable form and differs per payload (property)', () => {
    const sign = defineSignature(allTypes);
    const hash = defineSignature(allTypes, { hash: true });
    fc.assert(
      fc.property(values, values, presentation, (a, b, how) => {
        const ha = hash(toPayload(a, how));
        expect(ha).toHaveLength(47);
        expect(ha).toBe(sha(sign(toPayload(a, how))));
        if (JSON.stringify(canonicalValues(a)) !== JSON.stringify(canonicalValues(b))) {
          expect(ha).not.toBe(hash(toPayload(b, how)));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the length for long payloads', () => {
    expect(hashed({ room: 'x'.repeat(10_000), round: 10n ** 100n, net: 0, final: false })).toHaveLength(47);
  });

  it('validates the payload like the readable form', () => {
    expect(() => hashed({ room: 'r', round: 1.5, net: 0, final: true })).toThrow(/`payload\.round`/);
  });
});

describe('inherited properties', () => {
  it('a field missing from the payload is missing even when Object.prototype has that name', () => {
    const sig = defineSignature([['constructor', 'string']]);
    expect(() => sig({})).toThrow(/`payload.constructor`.*got `undefined`/);
    expect(sig({ constructor: 'x' })).toBe('v1|constructor=x');
  });
});
