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

local function written_at(entry)
  local f = entry[2]
  for i = 1, #f, 2 do
    if f[i] == 'a' then return tonumber(f[i + 1]) end
  end
end

-- The first retained offset (nil: the stream is empty), after dropping the head entries no younger
-- than max_age (0: no age bound): a prefix, the same as the memory store's trim. Entries are in
-- publish order, so a young head means nothing is old: the usual case reads one entry and writes
-- nothing. Only an old head pages, 64 entries at a time (each XRANGE reply small); the loop ends at
-- the first young entry or an empty stream, so it reads each dropped entry once (and the head twice).
local function head(stream, now, max_age)
  local page = call('XRANGE', stream, '-', '+', 'COUNT', 1)
  if #page == 0 then return nil end
  if max_age <= 0 or now - written_at(page[1]) < max_age then return offset_of(page[1][1]) end
  while true do
    page = call('XRANGE', stream, '-', '+', 'COUNT', 64)
    if #page == 0 then return nil end
    for _, e in ipairs(page) do
      if now - written_at(e) < max_age then
        call('XTRIM', stream, 'MINID', e[1])
        return offset_of(e[1])
      end
    end
    call('XTRIM', stream, 'MINID', int(offset_of(page[#page][1]) + 1) .. '-1')
  end
end

-- The user's epoch and end, creating the meta with `epoch` when it is missing or idle past its
-- x (a lost or expired stream: a new epoch, and any old entries and publish ids go with the old
-- one: an id's offset means nothing in another epoch), then the age retention. Returns epoch, end,
-- and the first retained offset: nil when the stream is empty, or when max_age is 0 (no
-- retention to apply, so the head is not read: call head() for it).
-- The caller then sets the meta's x to `now + idle_ttl` and, without `touch_stream`, PEXPIREs the
-- stream: folded into its own writes, that is one redis.call fewer each (a call from Lua costs
-- about as much as the command it runs).
local function open(meta, stream, ids, epoch, now, max_age, idle_ttl, touch_stream)
  local m = call('HMGET', meta, 'e', 'n', 'x')
  local e, n = m[1], tonumber(m[2])
  -- The key expiry reclaims a user gone for good; x judges idleness by `now`, which may be a
  -- test's clock, so every key also carries the same bound in the server's time. PEXPIRE of a
  -- missing key does nothing, so no EXISTS first.
  if not e or now >= tonumber(m[3]) then
    call('DEL', stream, ids)
    call('HSET', meta, 'e', epoch, 'n', 0)
    call('PEXPIRE', meta, idle_ttl)
    return epoch, 0, nil
  end
  call('PEXPIRE', meta, idle_ttl)
  if touch_stream then call('PEXPIRE', stream, idle_ttl) end
  call('PEXPIRE', ids, idle_ttl)
  if max_age <= 0 then return e, n, nil end
  return e, n, head(stream, now, max_age)
end
