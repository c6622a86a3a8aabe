// Redis stream entry ids, `<ms>-<seq>`: both parts are unsigned 64-bit integers in decimal, so
// they are compared as numbers (by length, then as text), never as strings ('9-0' < '10-0').

/** Negative when `a` comes before `b` in the stream, 0 when equal, positive after. */
export function compareStreamIds(a: string, b: string): number {
  if (a === b) return 0;
  const da = a.indexOf('-');
  const db = b.indexOf('-');
  const c = compareDecimal(a.slice(0, da), b.slice(0, db));
  return c !== 0 ? c : compareDecimal(a.slice(da + 1), b.slice(db + 1));
}

// Canonical unsigned decimals (Redis writes no leading zeros): the longer is larger.
function compareDecimal(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Whether `id` is a complete stream entry id as Redis writes it (`<ms>-<seq>`). */
export function isStreamId(id: unknown): id is string {
  return typeof id === 'string' && /^(0|[1-9]\d{0,19})-(0|[1-9]\d{0,19})$/.test(id);
}
