// The two defences users write first, each a short loop over the log. Both key on the
// settlement's signature and book under its own room, so they never misbook: they differ in what
// they remember, and for how long.
import type { DemoLog } from './log.js';
import { heldBytes, type Outcome, type Strategy } from './measure.js';

/**
 * A unique constraint on the signature (or an unbounded seen-set): exact, and it holds one key per
 * settlement ever seen, for as long as the table lives.
 */
export const uniqueIndex: Strategy = {
  id: 'unique-index',
  name: 'unique index / seen-set',
  run(log) {
    const seen = new Set<string>();
    let names = 0;
    const outcome = log.deliveries.map((d): Outcome => {
      const s = d.settlement;
      if (s === undefined) return undefined;
      if (seen.has(s.signature)) return 'blocked';
      seen.add(s.signature);
      names += s.signature.length;
      return 'applied';
    });
    const room = log.deliveries.map((d) => d.settlement?.room ?? -1);
    return { outcome, room, held: { keys: seen.size, bytes: heldBytes(names, seen.size) } };
  },
};

/**
 * `SET signature 1 NX EX ttl`: a repeat within `ttlMs` of the key's last setting is refused, one
 * after it is applied again. Held: the most keys alive at once on the log's arrival clock, so it
 * depends on the log's simulated rate (log.ts DELIVERIES_PER_SECOND): about one key per
 * delivery of the last `ttlMs`. `covering`: the row of the TTL that refuses every repeat of the
 * log, with an id of its own (`set-nx-ex-covering`), which a `--ttl` of the same value keeps apart.
 */
export function setNxEx(ttlMs: number, covering = false): Strategy {
  const seconds = Math.ceil(ttlMs / 1000);
  return {
    id: covering ? 'set-nx-ex-covering' : `set-nx-ex-${seconds}`,
    name: covering ? `SET NX EX ${seconds} (covering)` : `SET NX EX ${seconds}`,
    run(log) {
      const expires = new Map<string, number>();
      // Arrival times only grow and every key lives ttlMs, so keys expire in the order they were
      // set: a queue of them gives the count alive at any moment.
      const alive: { at: number; bytes: number }[] = [];
      let head = 0;
      let names = 0;
      let peak = { keys: 0, bytes: 0 };
      const outcome = log.deliveries.map((d): Outcome => {
        const s = d.settlement;
        if (s === undefined) return undefined;
        while (head < alive.length && (alive[head] as { at: number }).at <= d.at) {
          names -= (alive[head++] as { bytes: number }).bytes;
        }
        if ((expires.get(s.signature) ?? Number.NEGATIVE_INFINITY) > d.at) return 'blocked';
        expires.set(s.signature, d.at + ttlMs);
        alive.push({ at: d.at + ttlMs, bytes: s.signature.length });
        names += s.signature.length;
        if (alive.length - head > peak.keys) peak = { keys: alive.length - head, bytes: names };
        return 'applied';
      });
      const room = log.deliveries.map((d) => d.settlement?.room ?? -1);
      return { outcome, room, held: { keys: peak.keys, bytes: heldBytes(peak.bytes, peak.keys) } };
    },
  };
}

/**
 * The shortest TTL that refuses every repeat of this log: the longest time from a key's first
 * delivery to its last, rounded up to a whole minute.
 */
export function ttlCoveringEveryRepeat(log: DemoLog): number {
  const first = new Map<number, number>();
  let longest = 0;
  for (const d of log.deliveries) {
    const s = d.settlement;
    if (s === undefined) continue;
    const at = first.get(s.id);
    if (at === undefined) first.set(s.id, d.at);
    else longest = Math.max(longest, d.at - at);
  }
  return (Math.floor(longest / 60_000) + 1) * 60_000;
}
