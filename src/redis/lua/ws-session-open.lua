--[[
  ws-session-open: a connection takes a client session (docs/ws-protocol.md section 3): its token
  becomes the session's writer (the previous connection's begin and record are refused from then
  on), and the session's TTL restarts. A session without state (new, or expired) starts at seq 1.
  KEYS[1]   the session's state   hash   n: next seq expected   w: the writer's token
                                         o:<seq>: '<id> <outcome>'   i:<id>: seq (the last maxInFlight seqs)
                                         b: the seq last begun ('0' once recorded)
  KEYS[2]   the lease   string '<seq> <token>' with a PX TTL: the seq a begin answered run for,
            until recorded or leaseMs after (ws-session-begin.lua); none left by an expired state
  ARGV[1]   token (the new writer's)    ARGV[2] sessionTtlMs
  Returns   { continued (1 the state existed | 0 new), next seq (decimal text) }
]]

local key = KEYS[1]
local n = redis.call('HGET', key, 'n')
local continued = 1
if not n then
  continued, n = 0, '1'
  redis.call('HSET', key, 'n', n)
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', key, 'w', ARGV[1])
redis.call('PEXPIRE', key, ARGV[2])
return { continued, n }
