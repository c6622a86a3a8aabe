// Exactly-once settlement per player, in one process (the embedded memory store).
// Run: npm run build && node examples/settlement.mjs
import assert from 'node:assert/strict';
import { createLedger, defineSignature, memoryStore } from 'onceflow';

// Every party computes the same key from the settlement itself: no shared counter.
const settlement = defineSignature([
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
]);

// 4 = 2 settlements per round (instant + final) x 2 rounds that can overlap: each round's final is
// first delivered before the next round's instant, and repeats arrive before the round after next.
const SETTLEMENT_WINDOW = 4;
const ledger = createLedger({
  store: memoryStore({ journal: { maxEntries: 10_000 } }),
  capacity: SETTLEMENT_WINDOW,
});

/** What the consumer of the settlement queue does with each delivery. */
async function onSettlement(player, s, createdAt) {
  const result = await ledger.apply({
    owner: player,
    signature: settlement(s),
    deltas: { coins: s.net }, // integer minor units
    scope: s.room, // booked under its own room, wherever the player is now
    order: createdAt, // lets a too-small window answer `stale` instead of paying twice
  });
  if (result.outcome === 'stale') console.warn('send to reconciliation:', player, s);
  return result;
}

// At-least-once delivery: a late final after the player moved on, a repeat, a replay.
const log = [
  ['alice', { room: 'A', round: 1, net: 500, final: false }, 1],
  ['alice', { room: 'B', round: 9, net: -200, final: false }, 3],
  ['alice', { room: 'A', round: 1, net: -50, final: true }, 2], // late final from room A
  ['alice', { room: 'A', round: 1, net: 500, final: false }, 1], // a repeat
  ['alice', { room: 'B', round: 9, net: 120, final: true }, 4],
  ['alice', { room: 'B', round: 9, net: -200, final: false }, 3], // queue-recovery replay
];
for (const [player, s, at] of log) {
  const { outcome, balances } = await onSettlement(player, s, at);
  console.log(
    `${s.room}/${s.round} ${s.final ? 'final  ' : 'instant'} ${String(s.net).padStart(5)} -> ${outcome.padEnd(9)} coins=${balances.coins}`,
  );
}

assert.deepEqual(await ledger.balances('alice'), { coins: 370n });
assert.deepEqual(await ledger.totals('A'), { coins: 450n });
assert.deepEqual(await ledger.totals('B'), { coins: -80n });
console.log('room A settled 450, room B settled -80, alice holds 370: each settlement counted once');
