--[[
  snowflake-lease: take or renew a generator's lease: its persisted last timestamp, with the run
  that holds it. One run holds a name: a renewal by another is refused, and a new run takes the
  name over only if the lease is still the one it read and waited out (nobody renewed it since).
  KEYS[1]  {sf:name} lease            string   'ms|run' ('ms' as snowflake-clock.lua wrote it)
  ARGV[1]  ms                         the lease asked for, a non-negative integer below 2^53
  ARGV[2]  run                        this run's id (no '|')
  ARGV[3]  takeover                   '' to renew; else the lease a new run read (-1: none)
  Returns  {1, ms} held (ms: the lease now stored), or {0, ms} refused (ms: the other run's lease)
]]

local raw = redis.call('GET', KEYS[1])
local stored, owner = '-1', ''
if raw then
  local bar = string.find(raw, '|', 1, true)
  if bar then
    stored, owner = string.sub(raw, 1, bar - 1), string.sub(raw, bar + 1)
  else
    stored = raw
  end
end
local held = owner == ARGV[2]
if not held and ARGV[3] ~= '' then
  held = tonumber(stored) <= tonumber(ARGV[3])
end
if not held then
  return {0, stored}
end
-- Raw strings, never tostring(number) (exponents above 1e14 in Lua 5.1).
local ms = ARGV[1]
if tonumber(stored) > tonumber(ms) then ms = stored end
redis.call('SET', KEYS[1], ms .. '|' .. ARGV[2])
return {1, ms}
