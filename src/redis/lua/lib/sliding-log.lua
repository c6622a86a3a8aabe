-- A sliding log up to limit 512 is one string (code 'l': GET, SET PX, two calls); above it, a
-- sorted set (code 'z'); the client picks the code (STRING_LOG_MAX in src/limiter/algorithms.ts)
-- and the code is part of the key's name, so one key never holds the other representation.
-- A log holds at most `limit` entries of ~16 bytes, and each admitted request copies the string a
-- few times (GET, the new value, SET), so its cost grows with the limit while the sorted set's
-- stays flat. Measured with `node scripts/sliding-log-cost.mjs` (Redis µs per decision, log
-- filled to limit - 1 000): string 16.5 at limit 100, 22 at 300, 30 at 512, 61 at 1 000 and 661
-- at 10 000 (a build forced to strings); sorted set 26..32 at every size. 512 is the crossover.

-- The sliding log: '<total>,<newest>|' and then one '<time>:<cost>,' per admitted request still
-- (or lately) in the window, times ascending; total is the sum of the costs, newest the last time.
-- Expired entries are skipped from the front (each is parsed once more at most, then dropped by
-- the next write). A clock that stepped back behind the newest entry decides and records at the
-- newest entry's time (`at`), like the memory model: the log's timeline never moves back, so an
-- entry is always appended, and a wait still counts from the clock's own reading (`now`).
-- When a sliding log is empty again with no more requests: its newest live entry (`newest`, nil
-- when none) leaves the window, or this request's entry when it is admitted with a cost > 0.
-- Shared by both forms of the log (string and sorted set).
local function log_reset(newest, now, W, admitted)
  if admitted > 0 then return max(newest or now, now) + W end
  if newest then return newest + W end
  return now
end

local function sliding_log(key, L, W, cost, now)
  local v = redis.call('GET', key)
  if not v then
    if cost > L then return false, L, now, -1, nil end
    local reset = log_reset(nil, now, W, cost)
    local cost_s, now_s = count_text(cost), int(now)
    return true, L - cost, reset, 0, key, cost_s .. ',' .. now_s .. '|' .. now_s .. ':' .. cost_s .. ',', ttl(reset, now)
  end
  local comma = find(v, ',', 1, true)
  local bar = find(v, '|', comma + 1, true)
  local live = tonumber(sub(v, 1, comma - 1))
  local newest = tonumber(sub(v, comma + 1, bar - 1))
  local at = max(newest, now)
  local cutoff = at - W -- an entry at t counts while t > at - window
  local pos, n = bar + 1, #v
  while pos <= n do
    local colon = find(v, ':', pos, true)
    if tonumber(sub(v, pos, colon - 1)) > cutoff then break end
    local sep = find(v, ',', colon + 1, true)
    live = live - tonumber(sub(v, colon + 1, sep - 1))
    pos = sep + 1
  end
  if pos > n then newest = nil end
  if live + cost <= L then
    local reset = log_reset(newest, at, W, cost)
    -- One concatenation, each number written once: every string a script makes costs ~0.3-0.5 µs.
    -- Totals and costs are small and repeat across a batch: count_text writes each once per script.
    local at_s = int(at)
    return true, L - live - cost, reset, 0, key,
      count_text(live + cost) .. ',' .. at_s .. '|' .. sub(v, pos) .. at_s .. ':' .. count_text(cost) .. ',', ttl(reset, now)
  end
  local retry = -1
  if cost <= L then
    -- Drop the oldest live entries until the rest plus this cost fits: the last one dropped decides.
    local need = live + cost - L
    local freed, p = 0, pos
    while freed < need do
      local colon = find(v, ':', p, true)
      local sep = find(v, ',', colon + 1, true)
      freed = freed + tonumber(sub(v, colon + 1, sep - 1))
      if freed >= need then retry = tonumber(sub(v, p, colon - 1)) + W - now end
      p = sep + 1
    end
  end
  return false, L - live, log_reset(newest, now, W, 0), retry, nil
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
  return false, L - live, log_reset(newest, now, W, 0), retry, nil
end

