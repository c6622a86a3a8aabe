import type { GapRange } from '../windows/reorder-buffer.js';

/**
 * The numbers a compensator still has to compensate: sorted, disjoint, non-adjacent ranges.
 * `maxRange`: the longest range one request asks for (the pieces {@link stillOpen} and
 * {@link firstOpen} cut).
 */
export class OpenRanges {
  private open: GapRange[] = [];

  constructor(private readonly maxRange: number) {}

  /** The open ranges, as copies. */
  list(): GapRange[] {
    return this.open.map((r) => ({ ...r }));
  }

  clear(): void {
    this.open = [];
  }

  /** The parts of [from, to] still open, cut into pieces of at most maxRange (a bounded range only). */
  stillOpen(from: number, to: number): GapRange[] {
    const { maxRange } = this;
    const out: GapRange[] = [];
    for (const r of this.open) {
      const a = Math.max(from, r.from);
      const b = Math.min(to, r.to);
      for (let s = a; s <= b; s += maxRange) out.push({ from: s, to: Math.min(b, s + maxRange - 1) });
    }
    return out;
  }

  /**
   * The first still-open piece of [from, to], at most maxRange long, or undefined. Never lists the
   * rest: a queued job may span billions of numbers (one corrupt sequence number far ahead makes
   * a gap that size) and is requested piece by piece, as each piece starts.
   */
  firstOpen(from: number, to: number): GapRange | undefined {
    for (const r of this.open) {
      if (r.to < from) continue;
      if (r.from > to) return undefined;
      const a = Math.max(from, r.from);
      return { from: a, to: Math.min(to, r.to, a + this.maxRange - 1) };
    }
    return undefined;
  }

  remove(from: number, to: number): void {
    const next: GapRange[] = [];
    for (const r of this.open) {
      if (r.to < from || r.from > to) next.push(r);
      else {
        if (r.from < from) next.push({ from: r.from, to: from - 1 });
        if (r.to > to) next.push({ from: to + 1, to: r.to });
      }
    }
    this.open = next;
  }

  /** Opens [from, to]; returns the parts that were not open yet (those need a request). */
  add(from: number, to: number): GapRange[] {
    const fresh: GapRange[] = [];
    let s = from;
    for (const r of this.open) {
      if (r.to < s) continue;
      if (r.from > to) break;
      if (r.from > s) fresh.push({ from: s, to: r.from - 1 });
      s = r.to + 1;
      if (s > to) break;
    }
    if (s <= to) fresh.push({ from: s, to });
    const merged = [...this.open, { from, to }].sort((a, b) => a.from - b.from);
    const open: GapRange[] = [];
    for (const r of merged) {
      const last = open[open.length - 1];
      if (last !== undefined && r.from <= last.to + 1)
        open[open.length - 1] = { from: last.from, to: Math.max(last.to, r.to) };
      else open.push(r);
    }
    this.open = open;
    return fresh;
  }
}
