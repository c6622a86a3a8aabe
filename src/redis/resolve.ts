// The Redis side of `Store.ledgerResolve`: ledger-resolve.lua reads an owner's journal in steps
// of a bounded number of entries, so one long journal never holds the server for long; this
// runs the steps until one decides (see the script's header for why reading in steps is exact).
import { orderToString } from '../core/validate.js';
import type { LedgerApplyCommand, LedgerResolveResult, ResolveOutcome } from '../store/store.js';
import { evalScript, type RedisLike } from './eval.js';
import { type LuaScript, scripts } from './scripts.generated.js';

// Journal entries one step reads at most. Inside a script, an entry read costs Redis ~5 µs (its
// fields become Lua strings: 1000 entries took 4.6-7.4 ms, scripts/redis-resolve-cost.mjs), so a
// step of 200 holds the server ~1 ms: no longer than a batch of applies holds it (MAX_BATCH in
// ledger-ops.ts, ~2-3 ms).
export const RESOLVE_PAGE = 200;

/** A decided step: outcome, seq ('' unless applied), balances, 1 when the owner had no state. */
type Decided = [ResolveOutcome, string, Record<string, string>, 1?];
type Reply = Decided | ['more', string];

/**
 * Appends an entry's fields as both ledger scripts read them (signature, capacity, order,
 * horizon, scope, meta, delta count, then field/amount pairs) to `entry`, and returns it:
 * ledger-apply.lua's entries start with a call id, ledger-resolve.lua's with nothing.
 */
export function pushEntryFields(
  entry: (string | number)[],
  cmd: LedgerApplyCommand,
  meta: string | undefined,
): (string | number)[] {
  entry.push(
    cmd.signature,
    cmd.capacity,
    cmd.order === undefined ? '' : orderToString(cmd.order),
    cmd.horizon ? 1 : 0,
    cmd.scope ?? '',
    meta ?? '',
    cmd.deltas.length,
  );
  for (const [field, amount] of cmd.deltas) entry.push(field, amount.toString());
  return entry;
}

/** ledger-resolve.lua's entry argument for `cmd` (its `meta` already turned into JSON text). */
export function resolveEntry(cmd: LedgerApplyCommand, meta: string | undefined): string {
  return JSON.stringify(pushEntryFields([], cmd, meta));
}

/**
 * Runs ledger-resolve.lua on the owner's keys until a step decides. `step` runs each script call
 * (the store orders it with its own applies of the owner); `page` is the entries a step reads;
 * `evaluate` sends a script call (the store's durable call when it waits for replicas).
 */
export async function resolveSteps(
  client: RedisLike,
  keys: readonly [state: string, journal: string],
  entry: string,
  journalLimit: string,
  step: <T>(call: () => Promise<T>) => Promise<T>,
  page: number = RESOLVE_PAGE,
  evaluate: (
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ) => Promise<unknown> = (script, keys, args) => evalScript(client, script, keys, args),
): Promise<Decided> {
  let cursor = '';
  for (;;) {
    const raw = await step(() =>
      evaluate(scripts.ledgerResolve, keys, [entry, journalLimit, cursor, String(page)]),
    );
    const reply = JSON.parse(raw as string) as Reply;
    if (reply[0] !== 'more') return reply;
    cursor = reply[1];
  }
}

/** A decided step as the store's result. */
export function toResolveResult(
  [outcome, seq, amounts]: Decided,
  balancesOf: (amounts: Record<string, string>) => LedgerResolveResult['balances'],
): LedgerResolveResult {
  const balances = balancesOf(amounts);
  return outcome === 'applied' ? { outcome, balances, seq: Number(seq) } : { outcome, balances };
}
