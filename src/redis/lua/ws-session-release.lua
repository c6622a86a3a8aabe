--[[
  ws-session-release: a connection that began seq and cannot decide it (the store that decides its
  limits failed before its handler started) gives the seq back: its lease ends and the seq is no
  longer marked begun, so the next begin of it runs it as a first run, not `again` (layout in
  ws-session-open.lua). Changes nothing when the lease is not this token's on seq.
  KEYS[1]   the session's state   KEYS[2] the lease
  ARGV[1]   token   ARGV[2] seq
  Returns   1 released | 0 nothing to release
]]

if redis.call('GET', KEYS[2]) ~= ARGV[2] .. ' ' .. ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
if redis.call('HGET', KEYS[1], 'b') == ARGV[2] then redis.call('HSET', KEYS[1], 'b', '0') end
return 1
