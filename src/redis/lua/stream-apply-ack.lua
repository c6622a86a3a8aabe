--[[
  stream-apply-ack: for each delivered entry, the fencing check, the ledger apply (exactly as
  ledger-apply.lua books it: window with horizon, balances, scope totals, journal, replay marks)
  and the XACK, in one script: a consumer killed at any point leaves either nothing done (the entry
  is delivered again and booked then) or everything done (acked; not delivered again), and a
  consumer whose delivery was reclaimed can neither book it nor ack it. An entry the window answers
  `duplicate` is acked (booked before); one it answers `stale` is dead-lettered (reason
  'ledger-stale') and acked, so it is never silently dropped.

  Entry i (1-based) uses KEYS[4i-3 .. 4i]; on Redis Cluster all four share one hash slot:
  KEYS[4i-3]  stream          KEYS[4i-2] dead-letter stream
  KEYS[4i-1]  owner state     KEYS[4i]   owner journal (as ledger-apply.lua's KEYS[2i-1], KEYS[2i])
  ARGV[1]     group           ARGV[2] consumer
  ARGV[3]     entries: one flat JSON array; per entry its stream id, its token (delivery count),
              then its ledger entry as ledger-apply.lua's ARGV[1] holds one
  ARGV[4]     journal limit (as ledger-apply.lua's ARGV[2])
  ARGV[5]     run (as ledger-apply.lua's ARGV[3])
  ARGV[6]     dead-letter MAXLEN ('' none)
  Returns     a JSON array, one reply per entry: ["fenced"] (nothing done), or ledger-apply.lua's
              reply [outcome, seq, balances(, 1)] (the entry acked; a stale one dead-lettered)
]]

-- #include lib/int-compare.lua

-- #include lib/int-text.lua

-- #include lib/decimal-add.lua

local find, sub, match, byte = string.find, string.sub, string.match, string.byte

-- #include lib/journal-trail.lua

-- #include lib/stream-fence.lua

-- #include lib/stream-dead-letter.lua

local group, consumer = ARGV[1], ARGV[2]
local args = cjson.decode(ARGV[3])
local limit = ARGV[4]
local run = ARGV[5]
local dead_maxlen = ARGV[6]

-- #include lib/ledger-book.lua

local replies = {}
local a = 1
for k = 1, #KEYS, 4 do
  local stream, id, token = KEYS[k], args[a], args[a + 1]
  if stream_fenced(stream, group, consumer, id, token) then
    a = skip_entry(a + 2)
    replies[#replies + 1] = '["fenced"]'
  else
    local reply
    reply, a = book(KEYS[k + 2], KEYS[k + 3], a + 2)
    if sub(reply, 1, 8) == '["stale"' then
      stream_dead_letter(stream, KEYS[k + 1], group, id, 'ledger-stale', token, '', '', dead_maxlen)
    end
    redis.call('XACK', stream, group, id)
    replies[#replies + 1] = reply
  end
end
return '[' .. table.concat(replies, ',') .. ']'
