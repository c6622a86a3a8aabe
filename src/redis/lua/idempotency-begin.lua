--[[
  idempotency-begin: read the record of one idempotency key and take it when no live record is
  there, in one step (DESIGN §3.6, IdempotencyStoreOps.idempotencyBegin).
  KEYS[1]  {idem:name:key} record   hash   s: state ('p' in progress | 'c' completed)
                                           h: payload hash   e: expiry ms (the lease's while in
                                           progress, the ttl's once completed)   c: created ms
                                           d: the holder's token (in progress) | the value (completed)
  ARGV[1]  payloadHash   '' when payloads are not hashed
  ARGV[2]  token         the caller's lease owner token
  ARGV[3]  leaseMs       a positive safe integer
  Returns  {'acquired', now, leaseExpiresAt, takeover (1|0)} | {'completed', now, value}
           | {'in-progress', now, retryAfterMs} | {'mismatch', now}; now: Redis TIME, ms

  A record is live while now < e; a dead one answers as absent, whether or not Redis has deleted
  it yet (a completed record's key expires at e itself; see below for an in-progress one).
]]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local r = redis.call('HMGET', KEYS[1], 's', 'h', 'e', 'd')
local takeover = 0
if r[1] then
  local e = tonumber(r[3])
  if now < e then
    if r[2] ~= ARGV[1] then return {'mismatch', now} end
    if r[1] == 'c' then return {'completed', now, r[4]} end
    return {'in-progress', now, e - now}
  end
  if r[1] == 'p' then takeover = 1 end
end
local lease = tonumber(ARGV[3])
local expires = now + lease
-- Every field is written (d replaces a dead record's value or token): no HDEL needed.
redis.call('HSET', KEYS[1], 's', 'p', 'h', ARGV[1], 'e', expires, 'c', now, 'd', ARGV[2])
-- Kept one more lease after the lease (the slack): a caller that retries an `in-progress` after
-- its retryAfterMs, as it is told to, finds the dead record and is told it took over (`takeover`,
-- which renew, complete and release never depend on: they judge the lease by e). Past the slack a
-- dead holder's record is gone, so an abandoned key holds memory for at most two leases.
redis.call('PEXPIRE', KEYS[1], lease + lease)
return {'acquired', now, expires, takeover}
