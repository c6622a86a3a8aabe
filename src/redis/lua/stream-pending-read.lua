--[[
  stream-pending-read: a consumer's own pending entries from an id on, in id order, with their
  fields and delivery counts, changing nothing. How a consumer reads back the entries it left
  pending (spilled) while their key's backlog was full: XREADGROUP with an id would count one more
  delivery, and its reply has no delivery count (the fencing token).
  KEYS[1]  stream
  ARGV[1]  group    ARGV[2] consumer    ARGV[3] start (an id, or '(' and an id: after it)
  ARGV[4]  count
  Returns  { { id, { field, value, ... } (empty when the entry was trimmed), delivery count }, ... }
]]

local stream = KEYS[1]
local out = {}
for _, p in ipairs(redis.call('XPENDING', stream, ARGV[1], ARGV[3], '+', ARGV[4], ARGV[2])) do
  local e = redis.call('XRANGE', stream, p[1], p[1])[1]
  out[#out + 1] = { p[1], e and e[2] or {}, p[4] }
end
return out
