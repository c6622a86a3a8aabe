-- Fencing of a stream delivery: whether entry `id` is still pending in `group` as `consumer`'s
-- delivery number `token` (its delivery count when the consumer got it). A consumer whose delivery
-- was reclaimed (XAUTOCLAIM, XCLAIM: the owner changes and the count goes up) or that was already
-- acked (no pending entry) fails the check, so its late ack or effect is refused.
local function stream_fenced(stream, group, consumer, id, token)
  local p = redis.call('XPENDING', stream, group, id, id, 1)[1]
  return not (p and p[2] == consumer and p[4] == tonumber(token))
end
