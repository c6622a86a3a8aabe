import { expect } from 'vitest';
import {
  encodeClientFrame,
  encodeServerFrame,
  parseClientFrame,
  parseServerFrame,
} from '../../src/ws/frames.js';

/** `value` with every -0 made 0: JSON writes -0 as 0, the one change a round trip may make. */
export function normal(value: unknown): unknown {
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

/** Encoding a parsed frame gives back an equal frame, and the same text again. */
export function assertRoundTrip(side: 'client' | 'server', frame: unknown): void {
  const encode = side === 'client' ? encodeClientFrame : encodeServerFrame;
  const parse = side === 'client' ? parseClientFrame : parseServerFrame;
  const text = encode(frame as never);
  const again = parse(text);
  expect(again.ok).toBe(true);
  if (again.ok) {
    expect(normal(again.frame)).toEqual(normal(frame));
    expect(encode(again.frame as never)).toBe(text);
  }
}
