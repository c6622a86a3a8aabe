// Integer helpers that give the same answers in JavaScript and in Redis Lua (both use IEEE
// doubles): `%` is C's fmod, exact for doubles, while `Math.floor(a / b)` rounds the quotient
// first and can land on the wrong integer once |a / b| exceeds ~2^52 / b. Every limiter formula
// goes through these, and the Lua scripts have twins of them (`floordiv`, `ceildiv`).

/** floor(a / b) for integers a and b > 0, exactly. */
export function floorDiv(a: number, b: number): number {
  const r = a % b;
  const q = (a - r) / b;
  return r < 0 ? q - 1 : q;
}

/** ceil(a / b) for integers a and b > 0, exactly. */
export function ceilDiv(a: number, b: number): number {
  const r = a % b;
  const q = (a - r) / b;
  return r > 0 ? q + 1 : q;
}
