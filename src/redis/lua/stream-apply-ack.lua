--[[
  stream-apply-ack: for each delivered entry, the fencing check, the ledger apply (exactly as
  ledger-apply.lua books it: window with horizon, balances, scope totals, journal, replay marks)
  and the XACK, in one script: a consumer killed at any point leaves either nothing done (the entry
  is delivered again and booked then) or everything done (acked; not delivered again), and a
  consumer whose delivery was reclaimed can neither book it nor ack it. An entry the window answers
  `duplicate` is acked (booked before); one it answers `stale` is left pending, neither booked nor
  acked: below the horizon is no proof of a repeat (an owner's entries booked out of stream order,
  a crashed consumer's entry reclaimed late), so the consumer resolves it from the owner's journal
  (ledger-resolve.lua) and then acks it (stream-ack.lua) or dead-letters it (stream-dead.lua), both
  fenced. The entries of one key come in id order, as one run (the consumer's per-key order):
  once one of them is fenced or left pending (stale), the later ones of its run are not booked
  (`held`: nothing done), so none is booked before an older entry of its key.

  KEYS[1]     stream          KEYS[2] dead-letter stream (not written here: see above)
  KEYS[3]     attempts hash
  KEYS[4..]   per entry that books, its owner's state and journal keys (the pair ledger-apply.lua
              takes per entry); on Redis Cluster every key shares the stream's hash slot
  ARGV[1]     group           ARGV[2] consumer
  ARGV[3]     entries: one flat JSON array; per entry its stream id, its token (delivery count),
              1 when it follows the entry before it in its key's run (else 0), then 0 (nothing to
              book: fenced and acked only) or its ledger entry as ledger-apply.lua's ARGV[1] holds one
  ARGV[4]     journal limit (as ledger-apply.lua's ARGV[2])
  ARGV[5]     run (as ledger-apply.lua's ARGV[3])
  ARGV[6]     dead-letter MAXLEN ('' none; not used here, as KEYS[2])
  ARGV[7..9]  the lowest and highest stream id of the entries, and how many of the consumer's
              pending entries between them to read at most (see `pending` below)
  Returns     a JSON array, one reply per entry: ["fenced"] or ["held"] (nothing done), ["acked"]
              (nothing to book), or ledger-apply.lua's reply [outcome, seq, balances(, 1)] (the
              entry acked, unless stale: left pending)
]]

-- #include lib/int-compare.lua

-- #include lib/int-text.lua

-- #include lib/decimal-add.lua

local find, sub, match, byte = string.find, string.sub, string.match, string.byte

-- #include lib/journal-trail.lua

-- #include lib/stream-fence.lua

local group, consumer = ARGV[1], ARGV[2]
local args = cjson.decode(ARGV[3])
local limit = ARGV[4]
local run = ARGV[5]

-- The fence of every entry from one XPENDING over the batch's id range (the delivery count of each
-- entry pending as this consumer's), not one XPENDING per entry: the range reads the same pending
-- list, and nothing in this script changes it before the XACK at the end, so an entry found in it
-- is judged as its own XPENDING would judge it. One not found (fenced, or past the count when
-- the consumer holds more in the range) is checked alone by stream_fenced: the range only ever
-- saves calls, it never decides that an entry is fenced.
local pending = {}
for _, p in ipairs(redis.call('XPENDING', KEYS[1], group, ARGV[7], ARGV[8], ARGV[9], consumer)) do
  pending[p[1]] = p[4]
end

-- #include lib/ledger-book.lua

local stream = KEYS[1]
local replies, acked, counted = {}, { 'XACK', stream, group }, { 'HDEL', KEYS[3] }
local a, k, n = 1, 4, #args
local held = false -- an earlier entry of this run was fenced or left pending
while a <= n do
  local id, token, follows, books = args[a], args[a + 1], args[a + 2], args[a + 3] ~= 0
  if follows == 0 then held = false end
  local reply
  if held then
    reply = '["held"]'
  else
    local count = pending[id]
    local fenced
    if count == nil then
      fenced = stream_fenced(stream, group, consumer, id, token)
    else
      fenced = count ~= token
    end
    if fenced then
      reply, held = '["fenced"]', true
    elseif books then
      reply = book(KEYS[k], KEYS[k + 1], a + 3)
      held = byte(reply, 3) == 115 -- 's': ["stale", ...] (applied, duplicate, stale)
    else
      reply = '["acked"]'
    end
    if not held then
      acked[#acked + 1] = id
      if token ~= 1 then counted[#counted + 1] = id end
    end
  end
  replies[#replies + 1] = reply
  if books then
    a, k = skip_entry(a + 3), k + 2
  else
    a = a + 4
  end
end
-- One XACK for the batch: each entry was fenced before it was booked, and nothing else runs in
-- between (the script is atomic), so acking them together is the same as one by one.
if #acked > 3 then redis.call(unpack(acked)) end
if #counted > 2 then redis.call(unpack(counted)) end
return '[' .. table.concat(replies, ',') .. ']'
