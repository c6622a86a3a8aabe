--[[
  version-gate: store a value under a key only when its version is newer than the stored one,
  atomically (the read, the comparison and the write are one script: no other writer between).
  KEYS[1]  {gate:key} record   hash   v: version (canonical integer string)   d: value
  ARGV[1]  version             canonical integer string (no '+', no leading zeros, no '-0')
  ARGV[2]  value               the serialised value
  Returns  { outcome, version }  outcome 'applied' | 'duplicate' (same version) | 'stale' (older);
           version is the stored version after the call

  Versions are compared as decimal strings, not numbers: Lua numbers are doubles, and a CDC
  version (an LSN, a snowflake id) above 2^53 would compare wrongly once converted.
]]

-- #include lib/int-compare.lua

local stored = redis.call('HGET', KEYS[1], 'v')
if stored then
  local c = cmp(ARGV[1], stored)
  if c == 0 then return { 'duplicate', stored } end
  if c < 0 then return { 'stale', stored } end
end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'd', ARGV[2])
return { 'applied', ARGV[1] }
