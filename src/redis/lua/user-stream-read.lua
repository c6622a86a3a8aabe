--[[
  user-stream-read: a page of a user's stream after a position, or nothing when that position
  cannot be resumed in full (docs/ws-protocol.md §4: no partial recovery).

  KEYS[1]  meta     hash    e: epoch, n: end, x: idle deadline (lib/user-stream-open.lua)
  KEYS[2]  stream   stream  entries '<offset>-1' with t: type, b: body, a: ms
  KEYS[3]  ids      zset    publish ids (user-stream-publish.lua), dropped with a lost epoch
  ARGV[1]  epoch    a fresh epoch (user-streams.ts newEpoch), used only when the meta is missing
  ARGV[2]  from's epoch, or '' for no position   ARGV[3] from's offset
  ARGV[4]  limit    ARGV[5] maxAgeMs (0: none)   ARGV[6] idleTtlMs
  ARGV[7]  now in ms, or '' for the server's TIME
  Returns  { epoch, end, recovered (1|0), offset1, type1, body1, offset2, ... }

  Recovered only when from's epoch is the stream's, from's offset <= end and the first retained
  offset <= offset + 1 (every message after it is still held); an empty stream's first retained
  offset counts as end + 1.
]]
-- #include lib/user-stream-clock.lua
-- #include lib/user-stream-open.lua

local meta, stream, ids = KEYS[1], KEYS[2], KEYS[3]
local now = clock(ARGV[7])
local max_age = tonumber(ARGV[5])
local idle_ttl = tonumber(ARGV[6])
local epoch, n, first = open(meta, stream, ids, ARGV[1], now, max_age, idle_ttl, true)
call('HSET', meta, 'x', int(now + idle_ttl))
local out = { epoch, n, 0 }
if ARGV[2] ~= epoch then return out end
local from = tonumber(ARGV[3])
if from > n then return out end
-- open() read the head while applying the age bound; without one it did not look.
if max_age <= 0 then first = head(stream, now, 0) end
if first == nil then first = n + 1 end
if first > from + 1 then return out end
out[3] = 1
-- Nothing after from (the pump's last read of a burst): no XRANGE for an empty page.
if from == n then return out end
local page = call('XRANGE', stream, int(from + 1) .. '-1', '+', 'COUNT', tonumber(ARGV[4]))
for _, e in ipairs(page) do
  local f = e[2]
  local t, b
  for i = 1, #f, 2 do
    if f[i] == 't' then t = f[i + 1] elseif f[i] == 'b' then b = f[i + 1] end
  end
  out[#out + 1] = offset_of(e[1])
  out[#out + 1] = t
  out[#out + 1] = b
end
return out
