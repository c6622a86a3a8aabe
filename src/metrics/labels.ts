// Bounded label values: a label that is not enumerated (a configured name, a store kind, an error
// code) keeps at most `max` distinct values per metric; later values are folded into `other`, so
// a misconfigured caller (a limiter named per user) costs a fixed number of series, not one each.
import type { MetricDefinition } from './definitions.js';

/** The value every label value past the cap (or outside an enumerated label's values) becomes. */
export const OTHER = 'other';

/**
 * Distinct values kept per label per metric by default: room for every configured ledger, limiter
 * or scope of a real deployment (tens) while 100 x the enumerated outcomes (at most 20) bounds a
 * metric at 2,000 series.
 */
export const DEFAULT_MAX_LABEL_VALUES = 100;
/** The largest cap accepted: 10,000 values x 20 outcomes is already 200,000 series per metric. */
export const MAX_LABEL_VALUES_LIMIT = 10_000;
// A configured name is cut to this many characters: a label value stays a short name.
const MAX_VALUE_LENGTH = 64;

/** The label values of one metric, capped; `values(...)` returns them in the definition's order. */
export class LabelCap {
  readonly #seen: (Set<string> | readonly string[])[];
  readonly #max: number;

  constructor(def: MetricDefinition, max: number) {
    this.#max = max;
    this.#seen = def.labels.map((l) => l.values ?? new Set<string>());
  }

  /** `raw[i]` as label `i` will show it: itself, or `other` past the cap or outside its values. */
  value(i: number, raw: string): string {
    const seen = this.#seen[i];
    if (seen === undefined) return OTHER;
    if (!(seen instanceof Set)) return seen.includes(raw) ? raw : OTHER;
    const value = raw.length > MAX_VALUE_LENGTH ? raw.slice(0, MAX_VALUE_LENGTH) : raw;
    if (seen.has(value)) return value;
    if (seen.size >= this.#max) return OTHER;
    seen.add(value);
    return value;
  }
}
