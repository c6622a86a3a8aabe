--[[
  snowflake-clock: raise a generator's persisted last timestamp, never lower it, and return it.
  A generator that restarts reads it and refuses to issue ids until its clock has passed it.
  KEYS[1]  {sf:name} last timestamp   string   'ms' or 'ms|run' (snowflake-lease.lua writes the run)
  ARGV[1]  timestamp                  ms, a non-negative integer below 2^53 ('-1' only reads)
  Returns  the stored timestamp after the call, as a string ('-1' when none)
]]

-- Raw strings are returned, never tostring(number): Lua 5.1 prints large integers with exponents.
local raw = redis.call('GET', KEYS[1]) or '-1'
local stored = string.match(raw, '^[^|]*')
if tonumber(ARGV[1]) > tonumber(stored) then
  redis.call('SET', KEYS[1], ARGV[1])
  return ARGV[1]
end
return stored
