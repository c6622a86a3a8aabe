--[[
  stream-ack: acknowledges entries a consumer still holds, each fenced by its delivery count, so a
  consumer whose delivery was reclaimed (or already acked) cannot ack it.
  KEYS[1]   stream          KEYS[2] attempts hash (same hash slot on Cluster)
  ARGV[1]   group           ARGV[2] consumer
  ARGV[3..] id, token pairs: the entry id and the delivery count the consumer got it with
  Returns   one integer per entry, in order: 1 acked, 0 fenced (not pending as that delivery)
]]

-- #include lib/stream-fence.lua

local stream, attempts, group, consumer = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local out, acked, counted = {}, { 'XACK', stream, group }, { 'HDEL', attempts }
for i = 3, #ARGV, 2 do
  if stream_fenced(stream, group, consumer, ARGV[i], ARGV[i + 1]) then
    out[#out + 1] = 0
  else
    out[#out + 1] = 1
    acked[#acked + 1] = ARGV[i]
    -- Only a redelivered entry can have its attempts counted (see consumer.ts, attempts).
    if ARGV[i + 1] ~= '1' then counted[#counted + 1] = ARGV[i] end
  end
end
-- One XACK for the batch: the checks above ran first, and nothing else runs in between.
if #acked > 3 then redis.call(unpack(acked)) end
if #counted > 2 then redis.call(unpack(counted)) end
return out
