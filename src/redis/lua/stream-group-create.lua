--[[
  stream-group-create: creates a consumer group (XGROUP CREATE ... MKSTREAM), answering whether it
  existed instead of failing. A script, not a plain XGROUP: a client's `keyPrefix` is prepended to
  a script's KEYS, and ioredis's command table names no key of XGROUP (it would go unprefixed).
  KEYS[1]  stream              the stream (created empty when missing)
  ARGV[1]  group               the consumer group
  ARGV[2]  from                where the group starts: an entry id, '0' or '$'
  Returns  1 when created, 0 when the group existed; any other refusal as the server's error
]]

local r = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM')
if type(r) == 'table' and r.err then
  if string.sub(r.err, 1, 9) == 'BUSYGROUP' then return 0 end
  return r
end
return 1
