// What consumers write without a dedup key: each strategy a short loop over the log. They book
// under the player's *current* room (the consumer's guess, from `join`), so a final that arrives
// after a move is misbooked.
import type { Delivery, DemoLog, Settlement } from './log.js';
import type { Outcome, Run, Strategy } from './measure.js';

/** Runs `admit` over the settlements, tracking each player's current room from the joins. */
function currentRoomRun(log: DemoLog, admit: (s: Settlement) => boolean): Run {
  const current = new Array<number>(log.players).fill(-1);
  const outcome: Outcome[] = [];
  const room: number[] = [];
  log.deliveries.forEach((d: Delivery, i) => {
    if (d.join !== undefined) current[d.player] = d.join;
    else if (d.settlement && admit(d.settlement)) {
      outcome[i] = 'applied';
      room[i] = current[d.player] as number;
    } else outcome[i] = 'blocked';
  });
  return { outcome, room };
}

/**
 * Accept iff `round >= last round seen for the player`. Two settlements share a round number, so
 * repeats of the current round pass (doubled); rooms count their own rounds, so after a move to a
 * lower counter whole rounds look "past" (lost): a sequence number orders one writer's events only.
 */
export const sequenceGuard: Strategy = {
  id: 'sequence-guard',
  name: 'sequence guard',
  run(log) {
    const last = new Array<number>(log.players).fill(Number.NEGATIVE_INFINITY);
    return currentRoomRun(log, (s) => {
      if (s.round < (last[s.player] as number)) return false;
      last[s.player] = s.round;
      return true;
    });
  },
};

/**
 * Per player, one remembered round with an instant and a final flag. A replay of rounds r-1 and r
 * resets the flags to an old round and back: applied again (doubled).
 */
export const perTypeFlags: Strategy = {
  id: 'per-type-flags',
  name: 'per-type flags',
  run(log) {
    const seen = new Array<{ round: number; instant: boolean; final: boolean } | undefined>(log.players);
    return currentRoomRun(log, (s) => {
      let flags = seen[s.player];
      if (flags?.round !== s.round) seen[s.player] = flags = { round: s.round, instant: false, final: false };
      const kind = s.final ? 'final' : 'instant';
      if (flags[kind]) return false;
      flags[kind] = true;
      return true;
    });
  },
};

/** Applies every delivery under the settlement's own room: what at-least-once costs undefended. */
export const noDedup: Strategy = {
  id: 'no-dedup',
  name: 'no dedup',
  run(log) {
    return {
      outcome: log.deliveries.map((d) => (d.settlement ? 'applied' : undefined)),
      room: log.deliveries.map((d) => d.settlement?.room ?? -1),
    };
  },
};
