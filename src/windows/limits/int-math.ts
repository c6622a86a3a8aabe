// Integer division for the limiter math, exact for every safe integer. For integers a and b > 0
// with |a| < 2^53, a / b is rounded by at most |a / b| x 2^-53 < 1 / b, while a non-integer
// quotient lies at least 1 / b away from the next integer: rounding never crosses one, so
// Math.floor(a / b) is exact (and an integer quotient is representable, hence exact too). This
// is also why the Lua twins in limiter-take.lua agree with these to the millisecond. `%` would
// be exact as well, but on doubles beyond 2^31 (every time in ms) V8 calls out to fmod: slower.

/** floor(a / b) for safe integers a and b > 0, exactly. */
export function floorDiv(a: number, b: number): number {
  return Math.floor(a / b) + 0; // + 0: never hand back -0
}

/** ceil(a / b) for safe integers a and b > 0, exactly. */
export function ceilDiv(a: number, b: number): number {
  return Math.ceil(a / b) + 0; // Math.ceil(-0.5) is -0
}
