-- A sliding log up to limit 512 is one string (code 'd': GET, SET PX, two calls); above it, a
-- sorted set (code 'z'); the client picks the code (STRING_LOG_MAX in src/windows/limits/algorithms.ts)
-- and the code is part of the key's name, so one key never holds the other representation.
-- A log holds at most `limit` entries, and each admitted request copies the string a few times
-- (GET, the new value, SET), so its cost grows with the limit while the sorted set's stays flat.
-- Measured with `node scripts/sliding-log-cost.mjs` (Redis µs per decision on one full log of a
-- 1 min window, entries W / L apart, batches of 100 on that key): string 9.5 at limit 256, 13.6 at
-- 512, 14.6 at 768, 17.0 at 1 024 and 30.1 at 2 048; sorted set 13.6-13.9 at every size. 512 is
-- where they meet (~600 at most); the string takes 20-30x less memory there (2.6 KB against
-- 50 KB at 512), so it keeps every limit up to the crossover.

-- The string log: '<total>,<newest>,<oldest>|' and then one entry per admitted request still (or
-- lately) in the window, times ascending: '<delta>,' for a cost of 1, '<delta>:<cost>,' for
-- another cost. <delta> is the entry's time minus the previous entry's (the first entry's is not
-- read: its time is <oldest>); total is the sum of the costs, newest the last entry's time, oldest
-- the first's. Deltas keep entries short (a delta is below the window: `12,` where an absolute
-- time would be `1733222333444:1,`; 100 entries take 360 B instead of ~1.9 KB): the log is copied
-- whole on every admitted request, and absolute times add ~0.3-0.5 µs to a ~4.6 µs decision at
-- limit 50 (`node scripts/limiter-lua-ab.mjs <dist> <dist>`, a dist of each form). Expired
-- entries are found from the header alone while none has expired (the common case), and dropped
-- from the front by the next write. A clock that stepped back behind the newest entry decides and
-- records at the newest entry's time (`at`), like the memory model: the log's timeline never
-- moves back, so an entry is always appended, and a wait still counts from the clock's own
-- reading (`now`).
-- When a sliding log is empty again with no more requests: its newest live entry (`newest`, nil
-- when none) leaves the window, or this request's entry when it is admitted with a cost > 0.
-- Shared by both forms of the log (string and sorted set).
local function log_reset(newest, now, W, admitted)
  if admitted > 0 then return max(newest or now, now) + W end
  if newest then return newest + W end
  return now
end

-- One entry of the string log at `pos`: its delta and cost as text ('' for a cost of 1) and the
-- position after it (one anchored match: cheaper than finding the ':' and ',' apart).
local ENTRY = '^(%d+):?(%d*),()'

local function entry_cost(c)
  if c == '' then return 1 end
  return tonumber(c)
end

local function entry_text(delta, cost)
  if cost == 1 then return count_text(delta) .. ',' end
  return count_text(delta) .. ':' .. count_text(cost) .. ','
end

local function sliding_log(key, L, W, cost, now)
  local v = redis.call('GET', key)
  if not v then
    if cost > L then return false, L, now, -1, nil end
    local reset = log_reset(nil, now, W, cost)
    local now_s = int(now)
    return true, L - cost, reset, 0, key, count_text(cost) .. ',' .. now_s .. ',' .. now_s .. '|' .. entry_text(0, cost), ttl(reset, now)
  end
  local c1 = find(v, ',', 1, true)
  local c2 = find(v, ',', c1 + 1, true)
  local bar = find(v, '|', c2 + 1, true)
  local live = tonumber(sub(v, 1, c1 - 1))
  local newest = tonumber(sub(v, c1 + 1, c2 - 1))
  local first = tonumber(sub(v, c2 + 1, bar - 1)) -- the time of the entry at `pos`
  local at = max(newest, now)
  local cutoff = at - W -- an entry at t counts while t > at - window
  local pos, n = bar + 1, #v
  local dropped = false
  if first <= cutoff then
    dropped = true
    local _, c, after = match(v, ENTRY, pos)
    while true do
      live = live - entry_cost(c)
      pos = after
      if pos > n then break end
      local d
      d, c, after = match(v, ENTRY, pos)
      first = first + tonumber(d)
      if first > cutoff then break end
    end
  end
  if pos > n then newest = nil end
  if live + cost <= L then
    local reset = log_reset(newest, at, W, cost)
    local at_s = int(at)
    local value
    if not newest then
      value = count_text(cost) .. ',' .. at_s .. ',' .. at_s .. '|' .. entry_text(0, cost)
    elseif dropped then
      value = count_text(live + cost) .. ',' .. at_s .. ',' .. int(first) .. '|' .. sub(v, pos) .. entry_text(at - newest, cost)
    else
      -- Nothing dropped: the header's ',<oldest>|' and every entry are kept as they are, one copy.
      value = count_text(live + cost) .. ',' .. at_s .. sub(v, c2) .. entry_text(at - newest, cost)
    end
    return true, L - live - cost, reset, 0, key, value, ttl(reset, now)
  end
  local retry = -1
  if cost <= L then
    -- Drop the oldest live entries until the rest plus this cost fits: the last one dropped decides.
    local need = live + cost - L
    local freed, t = 0, first
    local _, c, after = match(v, ENTRY, pos)
    while true do
      freed = freed + entry_cost(c)
      if freed >= need then
        retry = t + W - now
        break
      end
      local d
      d, c, after = match(v, ENTRY, after)
      t = t + tonumber(d)
    end
  end
  return false, max(0, L - live), log_reset(newest, now, W, 0), retry, nil
end

-- A sliding log above limit 512 is a sorted set (O(log n) per request, where the string above
-- would copy the whole log). Its totals live in the sorted set itself, as four
-- members whose scores are
-- META + value: META = 2^52 lies far above any time in ms (~1.7e12) and META + value stays below
-- 2^53, so those scores are exact, never fall in an expiry range (-inf, now - W] and sort after
-- every entry. One key, one ZMSCORE to read them, one ZADD to write an entry and all four.
local META = 4503599627370496
local BELOW_META = '(' .. string.format('%.0f', META) -- '..' would print 4.5035996273705e+15
local function sliding_log_zset(zkey, L, W, cost, now)
  local total, seq, last, oldest = 0, 0, nil, nil
  local m = redis.call('ZMSCORE', zkey, '#t', '#s', '#l', '#o')
  if m[1] then
    total, seq = tonumber(m[1]) - META, tonumber(m[2]) - META
    last, oldest = tonumber(m[3]) - META, tonumber(m[4]) - META
  end
  local at = now -- the log's time: never behind its newest entry (see the string form)
  if last and last > now then at = last end
  local cutoff = at - W
  local live = total
  local expired = nil
  if total > 0 and oldest <= cutoff then
    expired = redis.call('ZRANGEBYSCORE', zkey, '-inf', cutoff)
    for _, e in ipairs(expired) do live = live - tonumber(string.match(e, ':(%d+)$')) end
  end
  -- The newest entry is the newest ever written (`last`): entries are recorded at `at`.
  local newest = nil
  if live > 0 then newest = last end
  if live + cost <= L then
    local reset = log_reset(newest, at, W, cost)
    return true, L - live - cost, reset, 0, nil, nil, nil, function()
      local first = at
      if expired then
        redis.call('ZREMRANGEBYSCORE', zkey, '-inf', cutoff)
        local head = redis.call('ZRANGE', zkey, 0, 0, 'WITHSCORES')
        local h = tonumber(head[2])
        if h < META then first = h end
      elseif live > 0 then
        first = oldest
      end
      seq = seq + 1
      redis.call('ZADD', zkey, at, int(seq) .. ':' .. int(cost), META + live + cost, '#t', META + seq, '#s',
        META + at, '#l', META + first, '#o')
      expire(zkey, reset, now)
    end
  end
  local retry = -1
  if cost <= L then
    local need = live + cost - L
    -- Every entry frees at least 1, so the `need` oldest live entries always free enough: one
    -- call, no paging (the memory model walks the same entries).
    local page = redis.call('ZRANGEBYSCORE', zkey, '(' .. int(cutoff), BELOW_META, 'WITHSCORES', 'LIMIT', 0, need)
    local freed = 0
    for i = 1, #page, 2 do
      freed = freed + tonumber(string.match(page[i], ':(%d+)$'))
      if freed >= need then
        retry = tonumber(page[i + 1]) + W - now
        break
      end
    end
  end
  return false, max(0, L - live), log_reset(newest, now, W, 0), retry, nil
end

