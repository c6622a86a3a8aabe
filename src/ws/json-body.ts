import type { FrameErrorCode } from './errors.js';

/** A JSON value as a frame's `body` carries it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * Why `value` cannot be a body: `null` when it can. Checks JSON-ness (what `JSON.stringify` would
 * drop or change silently: undefined, a function, NaN, a class instance, a cycle), depth (the
 * walk stops at `maxDepth`, so its recursion is bounded) and the key `__proto__` at any level
 * (refused so that no receiver, in any language, can merge a body into a prototype).
 */
export function bodyProblem(
  value: unknown,
  maxDepth: number,
  path = 'body',
): { code: FrameErrorCode; message: string } | null {
  return walk(value, maxDepth, 0, path);
}

function walk(
  value: unknown,
  maxDepth: number,
  depth: number,
  path: string,
): { code: FrameErrorCode; message: string } | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') {
    return Number.isFinite(value)
      ? null
      : { code: 'BAD_FRAME', message: `${path} is a number JSON cannot hold` };
  }
  if (typeof value !== 'object')
    return { code: 'BAD_FRAME', message: `${path} is not JSON (${typeof value})` };
  if (depth >= maxDepth) {
    return { code: 'TOO_DEEP', message: `body nests containers more than ${maxDepth} levels deep` };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) return { code: 'BAD_FRAME', message: `${path}[${i}] is a hole` };
      const problem = walk(value[i], maxDepth, depth + 1, `${path}[${i}]`);
      if (problem) return problem;
    }
    return null;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    return { code: 'BAD_FRAME', message: `${path} is not a plain object` };
  }
  for (const key of Object.keys(value)) {
    if (key === '__proto__') return { code: 'FORBIDDEN_KEY', message: `${path} has the key __proto__` };
    const problem = walk((value as Record<string, unknown>)[key], maxDepth, depth + 1, `${path}.${key}`);
    if (problem) return problem;
  }
  return null;
}

/**
 * The UTF-8 length of `text`, without encoding it (TextEncoder would allocate the bytes). A lone
 * surrogate counts 3, as the replacement character it is sent as.
 */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
