--[[
  user-stream-publish: appends one message to a user's server-to-client stream (onceflow/ws,
  docs/ws-protocol.md §4): the next offset of the epoch, then retention, in one atomic step.

  KEYS[1]  meta     hash    e: epoch, n: end, x: idle deadline (lib/user-stream-open.lua)
  KEYS[2]  stream   stream  entries '<offset>-1' with t: type, b: body, a: ms
  ARGV[1]  epoch    a fresh random epoch, used only when the meta is missing (a lost stream)
  ARGV[2]  type     ARGV[3] body (JSON text, checked by the client)
  ARGV[4]  maxLength   ARGV[5] maxAgeMs (0: none)   ARGV[6] idleTtlMs
  ARGV[7]  now in ms, or '' for the server's TIME
  Returns  { epoch, offset }
]]
-- #include lib/user-stream-clock.lua
-- #include lib/user-stream-open.lua

local meta, stream = KEYS[1], KEYS[2]
local now = clock(ARGV[7])
local max_len, max_age, idle_ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local epoch, n = open(meta, stream, ARGV[1], now, max_age, idle_ttl)
n = n + 1
call('XADD', stream, int(n) .. '-1', 't', ARGV[2], 'b', ARGV[3], 'a', int(now))
call('HSET', meta, 'n', int(n))
call('PEXPIRE', stream, idle_ttl)
-- Exact MAXLEN (no '~'): the bound is the one the memory model keeps, message for message.
call('XTRIM', stream, 'MAXLEN', max_len)
return { epoch, n }
