--[[
  stream-claim: this consumer's own failed entries claimed again by id once idle longer than a
  bound (XCLAIM), then XAUTOCLAIM of the group's entries idle longer than it, with each claimed
  entry's new delivery count (neither command returns it, and it is the new holder's fencing token).
  The failed entries are claimed by id because the consumer already holds them: their retry takes
  no room, so it cannot wait behind a consumer whose room is full of entries waiting for them.
  KEYS[1]  stream
  ARGV[1]  group     ARGV[2] consumer    ARGV[3] min idle (ms)    ARGV[4] cursor ('0-0' to start)
  ARGV[5]  count (0: no XAUTOCLAIM, only the entries by id)
  ARGV[6..] ids of failed entries the consumer holds
  Returns  { next cursor, { id, { field, value, ... }, delivery count }..., { deleted id, ... } }:
           deleted ids were pending but are gone from the stream (trimmed); XAUTOCLAIM has
           removed them from the pending list (XCLAIM removes them too, and returns nothing for them)
]]

local stream, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local claimed = {}
local function add(entries)
  for _, entry in ipairs(entries) do
    -- XCLAIM answers a nil for an entry it removed as deleted (Redis < 7).
    if type(entry) == 'table' then
      local p = redis.call('XPENDING', stream, group, entry[1], entry[1], 1)[1]
      claimed[#claimed + 1] = { entry[1], entry[2], p and p[4] or 0 }
    end
  end
end
if #ARGV > 5 then
  add(redis.call('XCLAIM', stream, group, consumer, ARGV[3], unpack(ARGV, 6)))
end
if tonumber(ARGV[5]) <= 0 then return { '0-0', claimed, {} } end
local r = redis.call('XAUTOCLAIM', stream, group, consumer, ARGV[3], ARGV[4], 'COUNT', ARGV[5])
add(r[2])
return { r[1], claimed, r[3] or {} }
