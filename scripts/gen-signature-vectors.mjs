#!/usr/bin/env node
// Writes test/vectors/signature-v1.json: the committed test vectors of the v1 signature encoding
// (DESIGN §3.1). Run it by hand: `node scripts/gen-signature-vectors.mjs` (`--check` only compares).
//
// The encoder below is written from the spec on purpose, not imported from src/: the vectors are a
// second opinion on the implementation (and a porting aid for other languages), so they must not be
// produced by the code they check. test/vectors/signature-vectors.test.ts compares the two. Read the
// output by eye before committing it; a vector is a promise to every party that signs events.

import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const OUT = fileURLToPath(new URL('../test/vectors/signature-v1.json', import.meta.url));

// ---- a spec-first v1 encoder -----------------------------------------------------------------

function encodeString(value) {
  if (typeof value !== 'string') throw new Error('string expected');
  let out = '';
  for (const ch of value) out += ch === '%' ? '%25' : ch === '|' ? '%7C' : ch;
  return out;
}

function encodeInt(value) {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value).toString();
  if (typeof value === 'string' && /^-?[0-9]+$/.test(value)) return BigInt(value).toString();
  throw new Error(`int expected: ${String(value)}`);
}

/** Decimal text without exponent, from JS number printing (which may use one). */
function numberToPlain(n) {
  const text = String(n);
  const e = text.indexOf('e');
  if (e < 0) return text;
  const negative = text.startsWith('-');
  const mantissa = text.slice(negative ? 1 : 0, e);
  const exponent = Number(text.slice(e + 1));
  const dot = mantissa.indexOf('.');
  const digits = mantissa.replace('.', '');
  const intLength = (dot < 0 ? mantissa.length : dot) + exponent;
  let plain;
  if (intLength <= 0) plain = `0.${'0'.repeat(-intLength)}${digits}`;
  else if (intLength >= digits.length) plain = digits + '0'.repeat(intLength - digits.length);
  else plain = `${digits.slice(0, intLength)}.${digits.slice(intLength)}`;
  return (negative ? '-' : '') + plain;
}

function encodeDecimal(value) {
  let text;
  if (typeof value === 'bigint') text = value.toString();
  else if (typeof value === 'number' && Number.isFinite(value)) text = numberToPlain(value);
  else if (typeof value === 'string' && /^-?[0-9]+(\.[0-9]+)?$/.test(value)) text = value;
  else throw new Error(`decimal expected: ${String(value)}`);
  const negative = text[0] === '-';
  if (negative) text = text.slice(1);
  let [int, frac = ''] = text.split('.');
  while (int.length > 1 && int[0] === '0') int = int.slice(1);
  while (frac.endsWith('0')) frac = frac.slice(0, -1);
  const body = frac === '' ? int : `${int}.${frac}`;
  return negative && body !== '0' ? `-${body}` : body;
}

function encodeBool(value) {
  if (value === true) return 'true';
  if (value === false) return 'false';
  throw new Error('bool expected');
}

const ENCODERS = { string: encodeString, int: encodeInt, decimal: encodeDecimal, bool: encodeBool };

function readable(schema, payload) {
  return ['v1', ...schema.map(([name, type]) => `${name}=${ENCODERS[type](payload[name])}`)].join('|');
}

function hashed(text) {
  return `v1h:${createHash('sha256').update(text, 'utf8').digest('base64url')}`;
}

// ---- JSON tags for values JSON cannot carry --------------------------------------------------

const big = (text) => ({ $bigint: text });
const num = (text) => ({ $number: text });

function decodeTags(value) {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    if (typeof value.$bigint === 'string') return BigInt(value.$bigint);
    if (typeof value.$number === 'string') return Number(value.$number);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decodeTags(v)]));
  }
  return value;
}

// ---- hand-picked payloads --------------------------------------------------------------------

const SETTLEMENT = [
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
];
const PAIR = [
  ['x', 'string'],
  ['y', 'string'],
];
const PRICE = [['price', 'decimal']];
const MIXED = [
  ['user.id', 'int'],
  ['sku-code', 'string'],
  ['_flag', 'bool'],
  ['qty', 'decimal'],
];
const s = (room, round, net, final) => ({ room, round, net, final });

const VECTORS = [
  ['settlement, the DESIGN example', SETTLEMENT, s('lobby-7', 42, -300, true)],
  ['settlement, instant, zero net', SETTLEMENT, s('lobby-7', 42, 0, false)],
  ['payload key order does not matter', SETTLEMENT, { final: true, net: -300, round: 42, room: 'lobby-7' }],
  [
    'fields outside the schema are ignored',
    SETTLEMENT,
    { ...s('lobby-7', 42, -300, true), ts: 1700000000000 },
  ],
  ['string: `|` is escaped as %7C', SETTLEMENT, s('a|b', 1, 1, true)],
  ['string: `%` is escaped as %25', SETTLEMENT, s('100%', 1, 1, true)],
  ['string: a literal %7C is not an escaped pipe', SETTLEMENT, s('%7C', 1, 1, true)],
  ['string: `=` is kept (names cannot hold it)', SETTLEMENT, s('k=v', 1, 1, true)],
  ['string: a value imitating a field', SETTLEMENT, s('x|round=2', 1, 1, true)],
  ['string: empty', SETTLEMENT, s('', 1, 1, true)],
  ['string: unicode, BMP and astral', SETTLEMENT, s('房间 café 🎲', 1, 1, true)],
  ['string: precomposed é', SETTLEMENT, s('\u00e9', 1, 1, true)],
  ['string: decomposed e + U+0301 (no normalisation)', SETTLEMENT, s('e\u0301', 1, 1, true)],
  ['string: control characters', SETTLEMENT, s('\n\t\u0000', 1, 1, true)],
  ['pair ("a|b", "c")', PAIR, { x: 'a|b', y: 'c' }],
  ['pair ("a", "b|c")', PAIR, { x: 'a', y: 'b|c' }],
  ['pair, both empty', PAIR, { x: '', y: '' }],
  ['int: bigint input', SETTLEMENT, s('r', big('42'), big('-300'), true)],
  ['int: string with leading zeros', SETTLEMENT, s('r', '007', '-007', true)],
  ['int: "-0" is 0', SETTLEMENT, s('r', '-0', '-000', true)],
  ['int: number -0 is 0', SETTLEMENT, s('r', 0, num('-0'), true)],
  ['int: safe integer edges', SETTLEMENT, s('r', 9007199254740991, -9007199254740991, false)],
  [
    'int: beyond 64 bits (bigint)',
    SETTLEMENT,
    s('r', big('18446744073709551616'), big('-170141183460469231731687303715884105728'), false),
  ],
  [
    'int: huge digit string',
    SETTLEMENT,
    s('r', '000123456789012345678901234567890', '-99999999999999999999999999999999999999', false),
  ],
  ['int: negative amount (money in minor units)', SETTLEMENT, s('r', 1, -1, false)],
  ['decimal: trailing zeros dropped', PRICE, { price: '12.500' }],
  ['decimal: "-0.00" is 0', PRICE, { price: '-0.00' }],
  ['decimal: number -0 is 0', PRICE, { price: num('-0') }],
  ['decimal: integer zeros are kept', PRICE, { price: '100' }],
  ['decimal: "100.000" is 100', PRICE, { price: '100.000' }],
  ['decimal: leading zeros dropped', PRICE, { price: '007.10' }],
  ['decimal: small negative', PRICE, { price: '-0.000001' }],
  ['decimal: long fraction kept exactly', PRICE, { price: '123456789.123456789' }],
  ['decimal: number 1e-7, no exponent', PRICE, { price: 1e-7 }],
  ['decimal: number -1.5e-7, no exponent', PRICE, { price: -1.5e-7 }],
  ['decimal: number 1.5e21, no exponent', PRICE, { price: 1.5e21 }],
  ['decimal: number 0.1', PRICE, { price: 0.1 }],
  ['decimal: number -12.5', PRICE, { price: -12.5 }],
  ['decimal: bigint', PRICE, { price: big('-100') }],
  ['bool: false', [['ok', 'bool']], { ok: false }],
  ['bool: true', [['ok', 'bool']], { ok: true }],
  ['mixed names with `.`, `-`, `_`', MIXED, { 'user.id': 1, 'sku-code': 'A|B%', _flag: true, qty: '2.50' }],
];

// Payloads every implementation must refuse with ERR_INVALID_ARGUMENT naming `path`.
const INVALID = [
  ['int: a float', SETTLEMENT, s('r', 1.5, 0, true), 'payload.round'],
  ['int: an exponent string', SETTLEMENT, s('r', '1e3', 0, true), 'payload.round'],
  ['int: a leading space', SETTLEMENT, s('r', ' 7', 0, true), 'payload.round'],
  ['int: a plus sign', SETTLEMENT, s('r', '+7', 0, true), 'payload.round'],
  ['int: beyond the safe range as a number', SETTLEMENT, s('r', 1, 9007199254740992, true), 'payload.net'],
  ['bool: the string "true"', SETTLEMENT, s('r', 1, 0, 'true'), 'payload.final'],
  ['bool: the number 1', SETTLEMENT, s('r', 1, 0, 1), 'payload.final'],
  ['missing field', SETTLEMENT, { room: 'r', round: 1, net: 0 }, 'payload.final'],
  ['string: null', SETTLEMENT, s(null, 1, 0, true), 'payload.room'],
  ['string: a number', SETTLEMENT, s(5, 1, 0, true), 'payload.room'],
  ['string: a lone surrogate (no UTF-8 form)', SETTLEMENT, s('a\ud800', 1, 0, true), 'payload.room'],
  ['decimal: an exponent string', PRICE, { price: '1e-7' }, 'payload.price'],
  ['decimal: no integer part', PRICE, { price: '.5' }, 'payload.price'],
  ['decimal: a comma', PRICE, { price: '1,5' }, 'payload.price'],
];

const file = {
  about: [
    'Test vectors of the onceflow v1 signature encoding (DESIGN §3.1), generated by scripts/gen-signature-vectors.mjs.',
    'Each vector: `schema` is the ordered list of [name, type] pairs; `payload` the input object; `readable` the output of',
    'defineSignature(schema); `hashed` the output of defineSignature(schema, { hash: true }), which is',
    "'v1h:' + base64url (RFC 4648 §5, no padding) of SHA-256 over the UTF-8 bytes of `readable`.",
    'Readable form: `v1` then, per schema field in schema order, `|name=value`. string: the value with every `%` written',
    '`%25` and every `|` written `%7C`, nothing else changed (no Unicode normalisation). int: canonical base-10 (no',
    'leading zeros, no `+`, `-0` is `0`). decimal: base-10 without exponent, leading zeros or trailing fraction zeros, and',
    '`-0` is `0`. bool: `true` or `false`. Payload keys outside the schema are ignored.',
    'Input encoding: JSON has no bigint and cannot write a negative zero, so a payload value',
    '{"$bigint": "<base-10 digits, optional leading ->"} stands for a bigint, and {"$number": "<text>"} for the',
    'IEEE-754 double that the text parses to (used for -0). Every other JSON number is a double, as in JavaScript.',
    'Input rules: int accepts a safe integer double (|n| <= 2^53 - 1), a bigint, or a string matching ^-?[0-9]+$.',
    'decimal accepts a finite double (written as JavaScript prints it, then without exponent), a bigint, or a string',
    'matching ^-?[0-9]+(\\.[0-9]+)?$. string accepts a string with no lone surrogate. bool accepts true or false.',
    '`invalid` lists payloads that must be refused with ERR_INVALID_ARGUMENT naming `path`.',
  ].join(' '),
  version: 'v1',
  vectors: VECTORS.map(([name, schema, payload]) => {
    const text = readable(schema, decodeTags(payload));
    return { name, schema, payload, readable: text, hashed: hashed(text) };
  }),
  invalid: INVALID.map(([name, schema, payload, path]) => ({ name, schema, payload, path })),
};

const text = `${JSON.stringify(file, null, 2)}\n`;
if (process.argv.includes('--check')) {
  // Used by the vector test: the committed file must be exactly what this script writes.
  const committed = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
  if (committed !== text) {
    console.error(`${OUT} is stale: run node scripts/gen-signature-vectors.mjs and review the diff`);
    process.exit(1);
  }
} else {
  writeFileSync(OUT, text);
  console.log(`wrote ${file.vectors.length} vectors and ${file.invalid.length} invalid payloads to ${OUT}`);
}
