--[[
  stream-claim: this consumer's own failed entries claimed again by id once idle longer than a
  bound (XCLAIM), then XAUTOCLAIM of the group's entries idle longer than it, with each claimed
  entry's new delivery count (neither command returns it, and it is the new holder's fencing token).
  The failed entries are claimed by id because the consumer already holds them: their retry takes
  no room, so it cannot wait behind a consumer whose room is full of entries waiting for them.
  KEYS[1]  stream           KEYS[2] attempts hash (same hash slot on Cluster)
  ARGV[1]  group     ARGV[2] consumer    ARGV[3] min idle (ms)    ARGV[4] cursor ('0-0' to start)
  ARGV[5]  count (0: no XAUTOCLAIM, only the entries by id)
  ARGV[6..] ids of failed entries the consumer holds
  Returns  { next cursor, { id, { field, value, ... }, delivery count }..., { deleted id, ... },
           { gone id, runs }... }: deleted ids were pending but are gone from the stream (trimmed);
           XAUTOCLAIM has removed them from the pending list. Gone ids are failed entries of this
           consumer, still pending as its own, whose entry was trimmed: XCLAIM would drop them from
           the pending list without a word (Redis 7), so they are not claimed but returned, with
           the handler runs counted for them (as stream-attempt.lua counts them), for the consumer to dead-letter from its own copy of
           the fields; XAUTOCLAIM is then skipped (it would drop them too) and the cursor returned
           as given
]]

local stream, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local claimed, retry, gone = {}, {}, {}
local function add(entries)
  for _, entry in ipairs(entries) do
    -- XCLAIM answers a nil for an entry it removed as deleted (Redis < 7).
    if type(entry) == 'table' then
      local p = redis.call('XPENDING', stream, group, entry[1], entry[1], 1)[1]
      claimed[#claimed + 1] = { entry[1], entry[2], p and p[4] or 0 }
    end
  end
end
for i = 6, #ARGV do
  local id = ARGV[i]
  local p = redis.call('XPENDING', stream, group, id, id, 1)[1]
  if p and p[2] == consumer and #redis.call('XRANGE', stream, id, id) == 0 then
    gone[#gone + 1] = { id, tonumber(redis.call('HGET', KEYS[2], id) or '0') + 1 }
  else
    retry[#retry + 1] = id
  end
end
if #retry > 0 then
  add(redis.call('XCLAIM', stream, group, consumer, ARGV[3], unpack(retry)))
end
if #gone > 0 then return { ARGV[4], claimed, {}, gone } end
if tonumber(ARGV[5]) <= 0 then return { '0-0', claimed, {}, gone } end
local r = redis.call('XAUTOCLAIM', stream, group, consumer, ARGV[3], ARGV[4], 'COUNT', ARGV[5])
add(r[2])
return { r[1], claimed, r[3] or {}, gone }
