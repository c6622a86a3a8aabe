--[[
  idempotency-renew: extend the holder's lease to now + leaseMs, iff `token` holds a live lease
  on the record (IdempotencyStoreOps.idempotencyRenew).
  KEYS[1]  {idem:name:key} record   hash   (fields in idempotency-begin.lua)
  ARGV[1]  token      the holder's lease owner token
  ARGV[2]  leaseMs    a positive safe integer
  Returns  1 renewed, 0 refused (no live lease of `token`: the holder must stop)
]]

-- #include lib/idempotency-lease.lua

local now = live_lease(ARGV[1])
if not now then return 0 end
local lease = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'e', now + lease)
-- The same slack after the lease as at begin (idempotency-begin.lua says why).
redis.call('PEXPIRE', KEYS[1], lease + lease)
return 1
