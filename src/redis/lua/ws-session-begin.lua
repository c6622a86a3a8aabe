--[[
  ws-session-begin: what to do with a client message (seq, id) a connection received, decided on
  the session's state (layout in ws-session-open.lua). Changes nothing but the TTL and, on run, the
  lease: the handler runs between this and ws-session-record.lua, which alone moves the next seq.
  KEYS[1]   the session's state   KEYS[2] the lease
  ARGV[1]   token   ARGV[2] seq   ARGV[3] id   ARGV[4] maxInFlight   ARGV[5] sessionTtlMs
  ARGV[6]   leaseMs
            seq and maxInFlight: positive safe integers as decimal strings
  Returns   { 'run' }                    seq is the next one and id is new: the lease is this token's
            { 'run', 'again' }           the same, and an earlier begin of seq ran without a record
            { 'busy', ms }               seq is the next one, leased to another token for ms more
            { 'decided', outcome }       seq has an outcome under this id (a re-send)
            { 'ahead' }                  past the next seq, within maxInFlight of the last outcome
            { 'too-far' }                more than maxInFlight past the last outcome
            { 'conflict' }               seq decided under another id, or id decided under another seq
            { 'forgotten' }              seq older than the kept outcomes
            { 'replaced' }               token is not the writer's
            { 'expired' }                no state (the TTL ran out since open)
]]

local key = KEYS[1]
-- Every field a decision may need, in one read: each redis.call costs about as much as the
-- command itself (argument conversion), so one HMGET of four fields beats three reads.
local st = redis.call('HMGET', key, 'n', 'w', 'o:' .. ARGV[2], 'i:' .. ARGV[3], 'b')
if not st[1] then return { 'expired' } end
if st[2] ~= ARGV[1] then return { 'replaced' } end
redis.call('PEXPIRE', key, ARGV[5])
local nxt, seq = tonumber(st[1]), tonumber(ARGV[2])
if seq < nxt then
  local kept = st[3]
  if not kept then return { 'forgotten' } end
  local sp = string.find(kept, ' ', 1, true)
  if string.sub(kept, 1, sp - 1) ~= ARGV[3] then return { 'conflict' } end
  return { 'decided', string.sub(kept, sp + 1) }
end
if st[4] then return { 'conflict' } end
if seq == nxt then
  local mine = ARGV[2] .. ' ' .. ARGV[1]
  -- `b`: the seq last begun, cleared by its record. It outlives the lease's expiry, so a begin of
  -- a seq begun before and never recorded says so (its handler may have run, its limits charged).
  local run = st[5] == ARGV[2] and { 'run', 'again' } or { 'run' }
  -- A record deletes the lease, so usually there is none: NX takes it in one command.
  if not redis.call('SET', KEYS[2], mine, 'PX', ARGV[6], 'NX') then
    local lease = redis.call('GET', KEYS[2])
    if lease and lease ~= mine and string.sub(lease, 1, #ARGV[2] + 1) == ARGV[2] .. ' ' then
      local ms = redis.call('PTTL', KEYS[2])
      if ms > 0 then return { 'busy', ms } end
    end
    redis.call('SET', KEYS[2], mine, 'PX', ARGV[6])
  end
  redis.call('HSET', key, 'b', ARGV[2])
  return run
end
if seq - (nxt - 1) > tonumber(ARGV[4]) then return { 'too-far' } end
return { 'ahead' }
