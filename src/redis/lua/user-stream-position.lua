--[[
  user-stream-position: a session's kept position (user-stream-ack.lua), unless dead.

  KEYS[1]  position  hash  u: user, e: epoch, o: offset, x: ms at which it is dead
  ARGV[1]  now in ms, or '' for the server's TIME
  Returns  { user, epoch, offset }, or an empty array when there is none
]]
-- #include lib/user-stream-clock.lua

local now = clock(ARGV[1])
local p = call('HMGET', KEYS[1], 'u', 'e', 'o', 'x')
if not p[1] or now >= tonumber(p[4]) then return {} end
return { p[1], p[2], tonumber(p[3]) }
