--[[
  stream-group-stats: one consumer group's pending count and lag, in one read (XINFO GROUPS; its
  `pending` is the group's pending entries list size, the count XPENDING's summary form answers).
  A script, not a plain XINFO: a client's `keyPrefix` is prepended to a script's KEYS, and ioredis's
  command table names no key of XINFO (it would go unprefixed and find no such key).
  KEYS[1]  stream              the stream
  ARGV[1]  group               the consumer group
  Returns  {pending, lag}: lag nil when Redis cannot tell (before 7.0, or entries deleted in the
           group's range); nil when there is no such stream or group
]]

if redis.call('EXISTS', KEYS[1]) == 0 then return false end
for _, group in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local fields = {}
  for i = 1, #group, 2 do fields[group[i]] = group[i + 1] end
  if fields['name'] == ARGV[1] then return { fields['pending'], fields['lag'] or false } end
end
return false
