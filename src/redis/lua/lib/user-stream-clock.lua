-- user-stream-clock: the clock of every user-stream script, included first (lib/user-stream-open.lua
-- uses `call` and `clock`). `given` is the caller's now in ms (tests run a fake clock); '' or nil
-- reads the server's TIME, one clock for every node.
local call = redis.call

local function clock(given)
  if given ~= nil and given ~= '' then return tonumber(given) end
  local t = call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
