--[[
  idempotency-complete: turn the in-progress record held by `token` into a completed one holding
  `value` until now + ttlMs, iff `token` holds a live lease on it: a holder whose lease ran out
  or was taken over cannot store its result (IdempotencyStoreOps.idempotencyComplete).
  KEYS[1]  {idem:name:key} record   hash   (fields in idempotency-begin.lua)
  ARGV[1]  token      the holder's lease owner token
  ARGV[2]  value      the serialized value
  ARGV[3]  ttlMs      a positive safe integer
  Returns  1 completed, 0 refused (no live lease of `token`)
]]

-- #include lib/idempotency-lease.lua

local now = live_lease(ARGV[1])
if not now then return 0 end
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 's', 'c', 'e', now + ttl, 'd', ARGV[2])
-- No slack: a completed record past its ttl answers as absent, deleted or not.
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
