--[[
  stream-touch-pending: resets the idle time of a consumer's own pending entries from an id on
  (XCLAIM ... JUSTID by its own name: the delivery count, its fencing token, stays), so that the
  entries it left pending (spilled) while their key was blocked are not reclaimed from a live
  consumer. Not touched: the ids given (its failed entries, which idle until claimIdle to be
  retried) and entries trimmed from the stream (XCLAIM would drop them from the pending list
  without a word; their read-back dead-letters them).
  KEYS[1]  stream
  ARGV[1]  group    ARGV[2] consumer    ARGV[3] start (an id, or '(' and an id: after it)
  ARGV[4]  count    ARGV[5..] ids not to touch
  Returns  { the last id read ('' when none), how many were read }
]]

local stream, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local skip = {}
for i = 5, #ARGV do skip[ARGV[i]] = true end
local pending = redis.call('XPENDING', stream, group, ARGV[3], '+', ARGV[4], consumer)
local reset = { 'XCLAIM', stream, group, consumer, 0 }
for _, p in ipairs(pending) do
  if not skip[p[1]] and #redis.call('XRANGE', stream, p[1], p[1]) > 0 then reset[#reset + 1] = p[1] end
end
if #reset > 5 then
  reset[#reset + 1] = 'JUSTID'
  redis.call(unpack(reset))
end
local last = pending[#pending]
return { last and last[1] or '', #pending }
