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
