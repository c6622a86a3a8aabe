--[[
  idempotency-release: delete the in-progress record held by `token` (its fn failed), iff
  `token` holds a live lease on it, so the next call runs again (IdempotencyStoreOps.idempotencyRelease).
  KEYS[1]  {idem:name:key} record   hash   (fields in idempotency-begin.lua)
  ARGV[1]  token      the holder's lease owner token
  Returns  1 released, 0 refused (no live lease of `token`: nothing changed)
]]

-- #include lib/idempotency-lease.lua

if not live_lease(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
return 1
