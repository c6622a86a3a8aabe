--[[
  ws-session-record: the outcome of a client message, stored iff the caller is the session's
  writer, or holds the live lease on seq (ws-session-begin.lua), and seq is the next one expected
  (a compare-and-set: a second record of a seq changes nothing). The lease ends with the record. The outcome of seq - maxInFlight, and its id, are dropped: the
  session keeps the last maxInFlight (layout in ws-session-open.lua).
  KEYS[1]   the session's state   KEYS[2] the lease
  ARGV[1]   token   ARGV[2] seq   ARGV[3] id   ARGV[4] outcome ('h' | 'l:<retryAfterMs>' | 'r:<code>')
  ARGV[5]   maxInFlight   ARGV[6] sessionTtlMs
  Returns   'recorded' | 'stale' (seq not the next one, or id already decided) | 'replaced' | 'expired'
]]

-- #include lib/int-text.lua

local key = KEYS[1]
local seq = tonumber(ARGV[2])
local old = seq - tonumber(ARGV[5])
local old_field = 'o:' .. int(old)
-- Every field the record may need, in one read (each redis.call costs about as much as the
-- command itself). The outcome to drop, o:<seq - maxInFlight>, is read before the HSET below,
-- which writes only o:<seq> and i:<id> of a new id: neither is that field nor its id's.
local st = redis.call('HMGET', key, 'n', 'w', 'i:' .. ARGV[3], old_field)
if not st[1] then return 'expired' end
if st[2] ~= ARGV[1] and redis.call('GET', KEYS[2]) ~= ARGV[2] .. ' ' .. ARGV[1] then return 'replaced' end
if tonumber(st[1]) ~= seq or st[3] then return 'stale' end
redis.call('DEL', KEYS[2])
redis.call('HSET', key, 'o:' .. ARGV[2], ARGV[3] .. ' ' .. ARGV[4], 'i:' .. ARGV[3], ARGV[2], 'n', int(seq + 1), 'b', '0')
local kept = st[4]
if old >= 1 and kept then
  redis.call('HDEL', key, old_field, 'i:' .. string.sub(kept, 1, string.find(kept, ' ', 1, true) - 1))
end
redis.call('PEXPIRE', key, ARGV[6])
return 'recorded'
