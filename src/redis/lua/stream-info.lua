--[[
  stream-info: XINFO STREAM of a stream, or nil when the key does not exist. A script, not a plain
  XINFO: a client's `keyPrefix` is prepended to a script's KEYS, and ioredis's command table names
  no key of XINFO (it would go unprefixed and find no such key).
  KEYS[1]  stream              the stream
  ARGV[]   none
  Returns  XINFO STREAM's reply (field, value, ...), or nil when there is no such key
]]

if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('XINFO', 'STREAM', KEYS[1])
