// The fair floor of the streams bench (and of scripts/stream-apply-ack-cost.mjs): a hand-written
// consumer doing the same durable work per entry as the consumer's ledger path, and nothing else
// (no fence, no replay marks, no horizon, no scope totals, no registry of owners, no options).
// It reads FLOOR_BATCH entries per XREADGROUP and runs FLOOR_SCRIPT once per batch: per entry a
// dedup check against the owner's FIFO window of the last 4 signatures, HINCRBY of the owner's
// balance, XADD of a journal row to the owner's journal, then one XACK for the whole batch.

/** Entries per XREADGROUP and per script call: the consumer's default `batch`. */
export const FLOOR_BATCH = 64;

// KEYS[1] stream, then per entry its owner's hash (w: the window, b: the balance) and journal.
// ARGV[1] group, then per entry its stream id, its signature and its amount.
// Returns the number of entries booked (the rest were duplicates).
export const FLOOR_SCRIPT = `
local find, sub = string.find, string.sub
local group, stream = ARGV[1], KEYS[1]
local ack, booked = { 'XACK', stream, group }, 0
local a = 2
for k = 2, #KEYS, 2 do
  local owner, journal = KEYS[k], KEYS[k + 1]
  local id, sig, amount = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  a = a + 3
  ack[#ack + 1] = id
  local w = redis.call('HGET', owner, 'w') or '\\255'
  if not find(w, '\\255' .. sig .. '\\255', 1, true) then
    -- FIFO of 4: the window is '\\255s1\\255s2\\255s3\\255s4\\255'; the oldest goes when it is full.
    local n, at = 0, 1
    while true do
      at = find(w, '\\255', at + 1, true)
      if not at then break end
      n = n + 1
    end
    if n >= 4 then w = sub(w, find(w, '\\255', 2, true)) end
    redis.call('HINCRBY', owner, 'b', amount)
    redis.call('HSET', owner, 'w', w .. sig .. '\\255')
    redis.call('XADD', journal, '*', 'sig', sig, 'd', amount)
    booked = booked + 1
  end
end
redis.call(unpack(ack))
return booked
`;

/** Up to `count` new entries of `stream` for `consumer` of `group` ([id, fields] pairs; [] when none). */
export async function readGroup(client, stream, group, consumer, count) {
  const reply = await client.call(
    'XREADGROUP',
    'GROUP',
    group,
    consumer,
    'COUNT',
    count,
    'STREAMS',
    stream,
    '>',
  );
  return reply?.[0]?.[1] ?? [];
}

/** The owner hash and journal keys of the floor's owner `player` (the stream's hash tag). */
export function floorKeys(prefix, player) {
  return [`${prefix}{s}floor:${player}`, `${prefix}{s}floor-journal:${player}`];
}

/**
 * Drains `stream` for `group` as one consumer: a read of FLOOR_BATCH, then the batch's script,
 * sent without waiting for the previous one (at most two in flight: the next read is on its way
 * while a batch is booked, as the consumer reads ahead of its bookings). Resolves with the entries
 * acked and the entries booked.
 */
export async function floorConsume(client, sha, stream, group, prefix) {
  let acked = 0;
  let booked = 0;
  let inFlight = Promise.resolve();
  for (;;) {
    const entries = await readGroup(client, stream, group, 'floor', FLOOR_BATCH);
    if (entries.length === 0) break;
    const keys = [stream];
    const args = [group];
    for (const [id, flat] of entries) {
      // Fields as the bench publishes them: e (the event's JSON), i (its id).
      const event = JSON.parse(flat[1]);
      keys.push(...floorKeys(prefix, event.player));
      args.push(id, flat[3], String(event.net));
    }
    await inFlight;
    inFlight = client.call('EVALSHA', sha, keys.length, ...keys, ...args).then((n) => {
      booked += Number(n);
      acked += entries.length;
    });
  }
  await inFlight;
  return { acked, booked };
}

/**
 * What a per-owner FIFO window of `capacity` signatures books of `events` (in stream order): the
 * expected balance per player and the number booked, as both the floor and the ledger (with that
 * capacity, no order, no horizon in play) must book them.
 */
export function expectedBooking(events, capacity = 4) {
  const windows = new Map();
  const balances = new Map();
  let booked = 0;
  for (const e of events) {
    const w = windows.get(e.player) ?? [];
    if (w.includes(e.id)) continue;
    w.push(e.id);
    if (w.length > capacity) w.shift();
    windows.set(e.player, w);
    balances.set(e.player, (balances.get(e.player) ?? 0n) + BigInt(e.net));
    booked++;
  }
  return { balances, booked };
}
