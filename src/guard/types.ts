/** `normal`: every get reaches the lookup. `degraded`: the filter and the null cache answer first. */
export type LookupGuardState = 'normal' | 'degraded';

/** What a lookup guard counts and holds: for metrics, dashboards and `onStateChange`. */
export interface LookupGuardStats {
  readonly state: LookupGuardState;
  /** The window's answers (null or not; a failed lookup is no answer). */
  readonly answers: number;
  /** The window's null answers, those the guard gave without the backend included. */
  readonly nulls: number;
  /** nulls / answers in the window (0 when there were none). */
  readonly nullRatio: number;
  /** The window's backend calls (failed ones included). */
  readonly calls: number;
  /** The share of the window's backend calls slower than the `p99` threshold: above 1%, the p99 is. */
  readonly slowRatio: number;
  /** Since creation: gets that reached the backend (joined concurrent gets count once). */
  readonly backendCalls: number;
  /** Since creation: gets answered null by the filter, without the backend. */
  readonly absentByFilter: number;
  /** Since creation: gets answered null from the null cache, without the backend. */
  readonly absentByNullCache: number;
  /** Null answers held now (some may have expired and not been dropped yet). */
  readonly cachedNulls: number;
  /** The filter of known keys, or `null` without the `known` option. */
  readonly known: {
    readonly size: number;
    readonly bytes: number;
    readonly hashes: number;
    readonly estimatedFalsePositiveRate: number;
  } | null;
}
