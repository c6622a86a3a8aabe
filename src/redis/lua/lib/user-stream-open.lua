-- user-stream-open: the first step of every user-stream script (user-stream-publish.lua,
-- user-stream-read.lua). Layout of one user's keys (one {hash tag}, one Cluster slot):
--   meta    hash    e: epoch   n: last offset (the end)   x: ms at which the stream is idle-dead
--   stream  stream  one entry per message, id '<offset>-1', fields t: type, b: body (JSON), a: ms
--   ids     zset    publish id scored by its offset: the last publishDedup ids of the epoch
-- The entry id is the offset itself: XRANGE by offset is a range read, the first retained offset
-- is the head's id, and XTRIM MINID drops a prefix, so retention never leaves a gap. The counter
-- lives in the meta hash, not in the stream's last id, because an XTRIM that empties the stream
-- must not restart the offsets of its epoch.
-- Needs lib/user-stream-clock.lua included before it (`call`, `clock`).

-- A number as integer text: Lua's `..` writes a number with %.14g, so an offset of 1e14 or more
-- would make an exponent-form stream id (invalid); offsets reach 2^53 - 1.
local function int(x)
  return string.format('%d', x)
end

local function offset_of(id)
  return tonumber(string.match(id, '^(%d+)'))
end

-- Drops the head entries no younger than max_age (0: no age bound): a prefix, the same as
-- the memory store's trim. Pages of 64 keep each XRANGE reply small; the loop ends at the first
-- young entry or an empty stream, so it reads each dropped entry once.
local function trim_age(stream, now, max_age)
  if max_age <= 0 then return end
  while true do
    local page = call('XRANGE', stream, '-', '+', 'COUNT', 64)
    if #page == 0 then return end
    for _, e in ipairs(page) do
      local f = e[2]
      local at
      for i = 1, #f, 2 do
        if f[i] == 'a' then at = tonumber(f[i + 1]) end
      end
      if now - at < max_age then
        call('XTRIM', stream, 'MINID', e[1])
        return
      end
    end
    call('XTRIM', stream, 'MINID', int(offset_of(page[#page][1]) + 1) .. '-1')
  end
end

-- The user's epoch and end, creating the meta with `epoch` when it is missing or idle past its
-- x (a lost or expired stream: a new epoch, and any old entries and publish ids go with the old
-- one: an id's offset means nothing in another epoch).
local function open(meta, stream, ids, epoch, now, max_age, idle_ttl)
  local m = call('HMGET', meta, 'e', 'n', 'x')
  local e, n = m[1], tonumber(m[2])
  if not e or now >= tonumber(m[3]) then
    call('DEL', stream, ids)
    e, n = epoch, 0
    call('HSET', meta, 'e', e, 'n', 0)
  end
  call('HSET', meta, 'x', int(now + idle_ttl))
  -- The key expiry reclaims a user gone for good; x judges idleness by `now`, which may be a
  -- test's clock, so both keys also carry the same bound in the server's time.
  call('PEXPIRE', meta, idle_ttl)
  if call('EXISTS', stream) == 1 then call('PEXPIRE', stream, idle_ttl) end
  if call('EXISTS', ids) == 1 then call('PEXPIRE', ids, idle_ttl) end
  trim_age(stream, now, max_age)
  return e, n
end
