--[[
  stream-claim: XAUTOCLAIM of entries idle longer than a bound, with each claimed entry's new
  delivery count (XAUTOCLAIM does not return it, and it is the new holder's fencing token).
  KEYS[1]  stream
  ARGV[1]  group     ARGV[2] consumer    ARGV[3] min idle (ms)    ARGV[4] cursor ('0-0' to start)
  ARGV[5]  count
  Returns  { next cursor, { id, { field, value, ... }, delivery count }..., { deleted id, ... } }:
           deleted ids were pending but are gone from the stream (trimmed); XAUTOCLAIM has
           removed them from the pending list
]]

local stream, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local r = redis.call('XAUTOCLAIM', stream, group, consumer, ARGV[3], ARGV[4], 'COUNT', ARGV[5])
local claimed = {}
for _, entry in ipairs(r[2]) do
  local p = redis.call('XPENDING', stream, group, entry[1], entry[1], 1)[1]
  claimed[#claimed + 1] = { entry[1], entry[2], p and p[4] or 0 }
end
return { r[1], claimed, r[3] or {} }
