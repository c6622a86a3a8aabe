/**
 * The wait before reconnect attempt `attempt` (0 for the first after a drop): "full jitter",
 * uniform in `[0, min(maxMs, minMs x 2^attempt))`. Spreading every client over the whole window
 * is what keeps a fleet that lost one node from coming back in one wave (AWS Architecture Blog,
 * "Exponential Backoff And Jitter": full jitter does the least total work of the schemes compared).
 * `random` is `Math.random` unless a test fixes it; a value outside [0, 1) is clamped into it.
 */
export function backoffDelay(attempt: number, minMs: number, maxMs: number, random: () => number): number {
  // 2^31 already passes any maxMs a duration can name; capping the exponent keeps the product finite.
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 31));
  const r = Math.min(Math.max(random(), 0), 1 - Number.EPSILON);
  return Math.floor(r * ceiling);
}
