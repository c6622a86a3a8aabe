import { createLedger, type Ledger } from '../../index.js';
import { type DemoLog, playerName, roomName } from './log.js';
import { type Held, heldBytes, type Outcome, type Strategy } from './measure.js';
import type { DemoStore } from './store.js';

// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap. DESIGN §3.2: if
// (a) each round's final is first delivered before the next round's instant and (b) every repeat
// of a round arrives before the round after next begins, at most 3 distinct other signatures
// (X's sibling and the next round's two) are first seen between X's first and last delivery, so
// a FIFO window of 4 never lets a repeat through. Do not raise it "to be safe": a larger window
// hides a broken delivery bound instead of reporting it; the horizon answers `stale` beyond it.
/** The settlement window capacity of the reference row. */
export const SETTLEMENT_CAPACITY = 4;
// One below the derivation, on purpose: without orders it doubles money (the bound is tight), with
// them the horizon makes the too-small window fail safe.
/** The deliberately too-small capacity of the comparison rows. */
export const TOO_SMALL_CAPACITY = 3;

// Applies in flight at once, one player per lane (a player's deliveries stay in order, which is
// all a per-owner window needs): enough to hide a network store's round trip, few enough that a
// PostgreSQL pool of 8 connections is never starved into timeouts.
const LANES = 64;
// Applies between progress reports: a redraw every few milliseconds in memory, several a second on
// a network store.
const PROGRESS_EVERY = 4096;

/**
 * The library's way: one ledger per row on the run's store; each settlement applied with its
 * signature as the dedup key, the player as owner and its own room as scope (never a "current
 * room"), with its creation time as `order` when `withOrder`. Joins are ignored.
 *
 * Usage (internal to the CLI): `await onceflowRow(4, true, await openStore(undefined)).run(log)`
 */
export function onceflowRow(
  capacity: number,
  withOrder: boolean,
  store: DemoStore,
  stop?: AbortSignal,
): Strategy {
  const id = withOrder ? `onceflow-c${capacity}` : `onceflow-c${capacity}-no-order`;
  return {
    id,
    name: `onceflow C=${capacity}${withOrder ? '' : ', no order'}`,
    async run(log, progress) {
      const ledger = createLedger({ store: store.store, name: id, capacity, horizon: withOrder });
      const outcome = await applyAll(ledger, log, withOrder, stop, progress);
      const totals: number[] = [];
      for (let r = 0; r < log.rooms; r++) totals.push(Number((await ledger.totals(roomName(r))).coins ?? 0));
      return {
        outcome,
        room: log.deliveries.map((d) => d.settlement?.room ?? -1),
        totals,
        held: windowsHeld(log, outcome, capacity),
      };
    },
  };
}

/**
 * What the players' windows hold after the run, from the outcomes alone (no read of a network
 * store): each `applied` signature enters its player's window as the newest, evicting the oldest
 * beyond `capacity`, and nothing else enters it (a duplicate or a stale answer changes nothing).
 * A player's deliveries are applied in log order (one lane per player), so this is the window's
 * content: the last `capacity` signatures each player booked.
 */
export function windowsHeld(log: DemoLog, outcome: readonly Outcome[], capacity: number): Held {
  const windows = new Map<number, string[]>();
  log.deliveries.forEach((d, i) => {
    const s = d.settlement;
    if (s === undefined || outcome[i] !== 'applied') return;
    let window = windows.get(s.player);
    if (!window) windows.set(s.player, (window = []));
    window.push(s.signature);
    if (window.length > capacity) window.shift();
  });
  let keys = 0;
  let names = 0;
  for (const window of windows.values()) {
    keys += window.length;
    for (const sig of window) names += sig.length;
  }
  return { keys, bytes: heldBytes(names, keys) };
}

/**
 * Applies the log's settlements, one lane per player at a time. Once `stop` is aborted no lane
 * starts another apply, and the call rejects only when none is in flight any more: whoever
 * removes the run's state afterwards finds nothing still being written.
 */
async function applyAll(
  ledger: Ledger,
  log: DemoLog,
  withOrder: boolean,
  stop?: AbortSignal,
  progress?: (done: number) => void,
): Promise<Outcome[]> {
  const byPlayer = new Map<number, number[]>();
  log.deliveries.forEach((d, i) => {
    if (d.settlement === undefined) return;
    let list = byPlayer.get(d.player);
    if (!list) byPlayer.set(d.player, (list = []));
    list.push(i);
  });
  const outcome: Outcome[] = new Array(log.deliveries.length).fill(undefined);
  const queues = [...byPlayer.values()];
  let next = 0;
  let done = 0;
  const lane = async (): Promise<void> => {
    while (next < queues.length) {
      for (const i of queues[next++] as number[]) {
        if (stop?.aborted) return;
        const s = log.deliveries[i]?.settlement;
        if (s === undefined) continue;
        const entry = {
          owner: playerName(s.player),
          signature: s.signature,
          deltas: { coins: s.net },
          scope: roomName(s.room),
        };
        const result = await ledger.apply(withOrder ? { ...entry, order: s.createdAt } : entry);
        if (++done % PROGRESS_EVERY === 0) progress?.(done);
        outcome[i] =
          result.outcome === 'applied' ? 'applied' : result.outcome === 'duplicate' ? 'blocked' : 'stale';
      }
    }
  };
  const lanes = await Promise.allSettled(Array.from({ length: LANES }, lane));
  if (stop?.aborted) throw new Error('the run was interrupted');
  for (const l of lanes) if (l.status === 'rejected') throw l.reason;
  return outcome;
}
