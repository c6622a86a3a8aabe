--[[
  user-stream-publish: appends one message to a user's server-to-client stream (onceflow/ws,
  docs/ws-protocol.md §4): the next offset of the epoch, then retention, in one atomic step.
  With a publish id already among the epoch's last publishDedup ids, it answers that publish's
  offset and appends nothing (a retry after a lost reply appends once).

  KEYS[1]  meta     hash    e: epoch, n: end, x: idle deadline (lib/user-stream-open.lua)
  KEYS[2]  stream   stream  entries '<offset>-1' with t: type, b: body, a: ms
  KEYS[3]  ids      zset    publish id scored by its offset, the newest publishDedup
  ARGV[1]  epoch    a fresh epoch (user-streams.ts newEpoch), used only when the meta is missing
                    (a new or lost stream)
  ARGV[2]  type     ARGV[3] body (JSON text, checked by the client)
  ARGV[4]  maxLength   ARGV[5] maxAgeMs (0: none)   ARGV[6] idleTtlMs
  ARGV[7]  now in ms, or '' for the server's TIME
  ARGV[8]  publish id, or '' for none   ARGV[9] publishDedup
  Returns  { epoch, offset } (the first publish's offset for a known id)
]]
-- #include lib/user-stream-clock.lua
-- #include lib/user-stream-open.lua

local meta, stream, ids = KEYS[1], KEYS[2], KEYS[3]
local now = clock(ARGV[7])
local max_len, max_age, idle_ttl = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local id = ARGV[8]
local epoch, n = open(meta, stream, ids, ARGV[1], now, max_age, idle_ttl, false)
local x = int(now + idle_ttl)
if id ~= '' then
  -- A score is a double: exact for every offset up to 2^53 - 1.
  local first = call('ZSCORE', ids, id)
  if first then
    call('HSET', meta, 'x', x)
    call('PEXPIRE', stream, idle_ttl)
    return { epoch, tonumber(first) }
  end
end
n = n + 1
-- Exact MAXLEN (no '~'): the bound is the one the memory model keeps, message for message.
call('XADD', stream, 'MAXLEN', max_len, int(n) .. '-1', 't', ARGV[2], 'b', ARGV[3], 'a', int(now))
call('HSET', meta, 'n', int(n), 'x', x)
call('PEXPIRE', stream, idle_ttl)
if id ~= '' then
  -- Offsets grow within an epoch, so rank order is publish order: the lowest ranks are the oldest.
  call('ZADD', ids, int(n), id)
  local excess = call('ZCARD', ids) - tonumber(ARGV[9])
  if excess > 0 then call('ZREMRANGEBYRANK', ids, 0, excess - 1) end
  call('PEXPIRE', ids, idle_ttl)
end
return { epoch, n }
