// How the kit compares a store's answer with the expected one, for every suite.

/** `undefined` when `got` and `expected` are the same value, else a failure naming `what` and both. */
export function differ(what: string, got: unknown, expected: unknown): string | undefined {
  const g = stableJson(got);
  const e = stableJson(expected);
  return g === e ? undefined : `${what}: expected ${e}, got ${g}`;
}

/** Stable JSON: object keys sorted (a store may build its answers in any key order), bigints as strings, `undefined` shown. */
export function stableJson(value: unknown): string {
  if (value === undefined) return 'undefined';
  return JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return v;
  });
}
