-- A limit's block (src/windows/limits/types.ts, LimitSpec.blockMs): the key '<its state key>|b'
-- holds the block's end in ms (store time) and expires after it. It shares the state key's hash
-- tag, so a take, a reset's SCAN and a delete reach it with the state. Read only for a limit with
-- a block length (the memory store's entry.blockedUntil).
local function block_of(key, now)
  local b = redis.call('GET', key .. '|b')
  if b then
    local u = tonumber(b)
    if u > now then return u end
  end
  return 0
end
