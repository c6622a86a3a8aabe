--[[
  idempotency-get: the state of one idempotency record, on Redis's clock, changing nothing
  (IdempotencyStoreOps.idempotencyGet: the read-only "seen before?" of docs/pre-checks.md). A
  script, not a plain HMGET, so that liveness is judged by the server's TIME as
  idempotency-batch.lua judges it, never by a client's clock.

  KEYS[1]  the record   hash (see idempotency-batch.lua): s state ('p' | 'c'), e expiry ms
  ARGV[*]  none
  Returns  'completed' | 'in-progress' | 'absent' (no record, or a dead one: now >= e)
]]

local r = redis.call('HMGET', KEYS[1], 's', 'e')
if not r[1] then return 'absent' end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now >= tonumber(r[2]) then return 'absent' end
if r[1] == 'c' then return 'completed' end
return 'in-progress'
