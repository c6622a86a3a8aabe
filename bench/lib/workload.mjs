// Deterministic delivery streams shared by every side of a comparison, built before any timing.

/** mulberry32: a small seeded PRNG, so every run (and every side) sees the same stream. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle(list, random) {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = list[i];
    list[i] = list[j];
    list[j] = t;
  }
  return list;
}

// A string built by `+=` is a rope (ConsString) until something flattens it, and whichever side
// touches it first would pay that cost for the other. A round trip through a Buffer gives a flat,
// non-internalised string: like a signature freshly decoded from a message.
const flat = (s) => Buffer.from(s, 'latin1').toString('latin1');

/**
 * A settlement delivery stream with at-least-once repeats, as a game server sees it.
 *
 * `players` players sit in rooms of `roomSize`. Every round each player gets two settlements
 * (instant, then final) with a random net in minor units. Each round's settlements are shuffled
 * together (rooms interleave), and a fraction `dupRate` of them is delivered again at a random
 * position of the next round: a redelivery after a consumer restart. That keeps every repeat
 * inside the capacity-4 bound of DESIGN §3.2, so a correct window answers `duplicate` for each.
 *
 * Signatures are computed with `sign` (the settlement signature) and flattened; a repeat gets its
 * own string object (computed again), as it would after decoding the message a second time.
 *
 * @returns {{ length, owners: string[], signatures: string[], nets: number[], rooms: string[],
 *   fresh: number, duplicates: number }}
 */
export function settlementStream({ sign, players, roomSize = 50, rounds, dupRate, seed = 42 }) {
  const random = prng(seed);
  const playerIds = Array.from({ length: players }, (_, i) => `player-${i}`);
  const roomOf = Array.from({ length: players }, (_, i) => `room-${Math.floor(i / roomSize)}`);
  const owners = [];
  const signatures = [];
  const nets = [];
  const rooms = [];
  let carried = []; // repeats of the previous round, delivered during this one
  let fresh = 0;
  for (let round = 1; round <= rounds; round++) {
    const events = [];
    for (let p = 0; p < players; p++) {
      for (const final of [false, true]) {
        const net = Math.floor(random() * 2001) - 1000;
        events.push({ p, room: roomOf[p], round, net, final, repeat: false });
      }
    }
    shuffle(events, random);
    // Keep instant before final for each player (the settlement rule (a) of DESIGN §3.2).
    const seen = new Map();
    for (let i = 0; i < events.length; i++) {
      const e = events[i];
      const j = seen.get(e.p);
      if (j === undefined) seen.set(e.p, i);
      else if (events[j].final) [events[i], events[j]] = [events[j], events[i]];
    }
    fresh += events.length;
    const next = [];
    for (const e of events) if (random() < dupRate) next.push({ ...e, repeat: true });
    // Insert the previous round's repeats at random positions of this round.
    const keyed = events.map((e, i) => [i, e]);
    for (const e of carried) keyed.push([random() * events.length, e]);
    keyed.sort((x, y) => x[0] - y[0]);
    carried = next;
    for (const [, e] of keyed) {
      owners.push(playerIds[e.p]);
      signatures.push(flat(sign({ room: e.room, round: e.round, net: e.net, final: e.final })));
      nets.push(e.net);
      rooms.push(e.room);
    }
  }
  return { length: owners.length, owners, signatures, nets, rooms, fresh, duplicates: owners.length - fresh };
}

/**
 * `n` lanes of delivery indexes, partitioned by player so each player's deliveries stay in order
 * within one lane (as the consumers of a partitioned queue would see them).
 */
export function playerLanes(stream, n) {
  const lanes = Array.from({ length: n }, () => []);
  for (let i = 0; i < stream.length; i++) lanes[Number(stream.owners[i].slice('player-'.length)) % n].push(i);
  return lanes;
}

/** Runs `step(i)` for every delivery index of `lanes`: the lanes in parallel, each lane in order. */
export async function runLanes(lanes, step) {
  await Promise.all(
    lanes.map(async (lane) => {
      for (const i of lane) await step(i);
    }),
  );
}

/**
 * Applies one empty entry per (player, room) pair of the stream, so a ledger's owner and scope
 * registrations are made before a timed run (as in a long-running process): the run then measures
 * steady-state applies, not first contact. `indexes`: only those deliveries' pairs (a client
 * process's share); default every delivery's.
 */
export async function registerRooms(ledger, stream, indexes = stream.owners.keys()) {
  const pairs = new Map();
  for (const i of indexes) pairs.set(`${stream.owners[i]}\n${stream.rooms[i]}`, i);
  await Promise.all(
    [...pairs.values()].map((i) =>
      ledger.apply({
        owner: stream.owners[i],
        signature: `warm:${stream.rooms[i]}`,
        deltas: {},
        scope: stream.rooms[i],
      }),
    ),
  );
}

/** The settlement signature's schema (DESIGN §3.1): `defineSignature(SETTLEMENT_FIELDS)`. */
export const SETTLEMENT_FIELDS = [
  ['room', 'string'],
  ['round', 'int'],
  ['net', 'int'],
  ['final', 'bool'],
];

/**
 * The redis-ledger suite's workload, shared with the scripts that take its cost apart: 2,000
 * players, 6 rounds, 22% repeats (~28,450 deliveries), 200 lanes partitioned by player.
 */
export function redisLedgerWorkload(sign) {
  const stream = settlementStream({ sign, players: 2000, rounds: 6, dupRate: 0.22 });
  return { stream, lanes: playerLanes(stream, 200) };
}

/** Delivery `i` of `stream` as a ledger entry (coins, booked under its room). */
export function settlementEntry(stream, i) {
  return {
    owner: stream.owners[i],
    signature: stream.signatures[i],
    deltas: { coins: stream.nets[i] },
    scope: stream.rooms[i],
  };
}

/**
 * Throws unless a ledger's outcome `counts` ({ applied, duplicate, stale }) over one pass of
 * `stream` are what the stream holds: every fresh delivery applied, every repeat a duplicate.
 */
export function checkOutcomes(stream, counts) {
  if (counts.applied !== stream.fresh || counts.duplicate !== stream.duplicates) {
    throw new Error(`ledger outcomes ${JSON.stringify(counts)}, expected ${stream.fresh} applied`);
  }
}

/** Applies every delivery of `stream` to `ledger`, the lanes in parallel, each lane in order. */
export function applyInLanes(ledger, stream, lanes) {
  return runLanes(lanes, (i) => ledger.apply(settlementEntry(stream, i)));
}

/**
 * The redis-cluster suite's workload: the redis-ledger suite's stream, in `processes` x
 * `perProcess` lanes partitioned by player (lane l holds the players p with p % lanes === l, so
 * process w, taking the lanes with l % processes === w, owns the players p % processes === w).
 */
export function clusterWorkload(sign, processes, perProcess) {
  const stream = settlementStream({ sign, players: 2000, rounds: 6, dupRate: 0.22 });
  return { stream, lanes: playerLanes(stream, processes * perProcess) };
}
