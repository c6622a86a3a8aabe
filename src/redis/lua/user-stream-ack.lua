--[[
  user-stream-ack: records a session's last acked position in a user's stream. Within one epoch
  (and one user) it never moves back; another epoch or user replaces it. Kept ttl after each ack.

  KEYS[1]  position  hash  u: user, e: epoch, o: offset, x: ms at which it is dead
  ARGV[1]  user   ARGV[2] epoch   ARGV[3] offset   ARGV[4] sessionTtlMs
  ARGV[5]  now in ms, or '' for the server's TIME
  Returns  the offset kept
]]
-- #include lib/user-stream-clock.lua

local now = clock(ARGV[5])
local key, ttl = KEYS[1], tonumber(ARGV[4])
local p = call('HMGET', key, 'u', 'e', 'o', 'x')
local offset = tonumber(ARGV[3])
if p[1] == ARGV[1] and p[2] == ARGV[2] and now < tonumber(p[4]) and tonumber(p[3]) > offset then
  offset = tonumber(p[3])
end
call('HSET', key, 'u', ARGV[1], 'e', ARGV[2], 'o', offset, 'x', now + ttl)
call('PEXPIRE', key, ttl)
return offset
