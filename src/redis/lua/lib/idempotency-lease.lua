-- The server's time in ms (Redis TIME: every client agrees on it, whatever its own clock), and
-- whether `token` holds a live lease on the record KEYS[1]: in progress ('p'), held by `token`
-- (field d), and now before its lease expiry (field e). An in-progress record outlives its lease
-- by a slack (see idempotency-begin.lua), so an expired lease is judged here, never by whether
-- Redis has deleted the key yet: a lease that ran out is lost whether or not it is still stored.
local function server_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function live_lease(token)
  local r = redis.call('HMGET', KEYS[1], 's', 'e', 'd')
  if r[1] ~= 'p' or r[3] ~= token then return nil end
  local now = server_now()
  if now >= tonumber(r[2]) then return nil end
  return now
end
