--[[
  ws-session-touch: the session's TTL restarts while its writer's connection is open, so the state
  outlives the last connection by sessionTtlMs, however long that connection was silent (layout
  in ws-session-open.lua).
  KEYS[1]   the session's state
  ARGV[1]   token   ARGV[2] sessionTtlMs
  Returns   'touched' | 'replaced' (token is not the writer's: nothing changed) | 'expired' (no state)
]]

local key = KEYS[1]
local w = redis.call('HGET', key, 'w')
if not w then return 'expired' end
if w ~= ARGV[1] then return 'replaced' end
redis.call('PEXPIRE', key, ARGV[2])
return 'touched'
