-- Each decide returns allowed, remaining, resetAt, retry (-1 never) and, when allowed, what to
-- write: a string key, its value and TTL (no closure: a decision costs a few µs of server time,
-- and closures and pattern captures are a measurable part of it, scripts/limiter-lua-ab.mjs), or
-- (the sorted-set log) a commit function.

local function fixed_window(key, L, W, cost, now)
  local v = redis.call('GET', key)
  local start, count
  if v then start, count = pair(v) end
  local time = now
  if start and now < start then time = start end
  local ws = floordiv(time, W) * W -- the window holding `time`, negative times too
  local used = 0
  if start == ws then used = count end
  local wend = ws + W
  if used + cost <= L then
    local reset = time
    if used + cost > 0 then reset = wend end
    return true, L - used - cost, reset, 0, key, int(ws) .. ':' .. int(used + cost), ttl(wend, now)
  end
  local reset = time
  if used > 0 then reset = wend end
  local retry = wend - now
  if cost > L then retry = -1 end
  return false, max(0, L - used), reset, retry, nil
end

local function gcra(key, L, W, burst, cost, now)
  local v = redis.call('GET', key)
  local q, f = now, 0
  if v then
    local sq, sf = pair(v)
    if sq >= now then q, f = sq, sf end
  end
  local sum = f + cost * W
  local carry = floordiv(sum, L)
  local q2, f2 = q + carry, sum - carry * L
  local ahead = (q2 - now) * L + f2
  if ahead <= burst * W then
    local rq, rf = q, f
    if cost > 0 then rq, rf = q2, f2 end
    local reset = rq
    if rf > 0 then reset = rq + 1 end
    local at = q2
    if f2 > 0 then at = q2 + 1 end
    return true, floordiv(burst * W - ahead, W), reset, 0, key, int(q2) .. ':' .. int(f2), ttl(at, now)
  end
  local held = (q - now) * L + f
  local reset = q
  if f > 0 then reset = q + 1 end
  local retry = -1
  if cost <= burst then retry = q + ceildiv(f - (burst - cost) * W, L) - now end
  return false, max(0, floordiv(burst * W - held, W)), reset, retry, nil
end

-- A bucket's count as text: most are small and repeat across a batch's decisions (0, 1, 2 ...),
-- so the first 1 024 are written once per script; a window writes each bucket with a count.
local small_counts = {}
local function count_text(n)
  if n >= 1024 then return int(n) end
  local text = small_counts[n]
  if not text then
    text = int(n)
    small_counts[n] = text
  end
  return text
end

-- When the window is full again with no more requests: the end of the newest non-empty bucket
-- (with `extra` added to the newest one), else `time`.
local function window_reset(counts, B, c, G, time, extra)
  for j = B, 0, -1 do
    local n = counts[j]
    if j == B then n = n + extra end
    if n > 0 then return (c + j + 1) * G end
  end
  return time
end

-- The bucketed window's string: '<newest bucket index>|' and then '<j>=<count>,' for each bucket
-- with a count, j its place among the B + 1 buckets ending at that index (0 the oldest, B the
-- newest). Only buckets with a count are written: a key's requests usually fall in a few of them,
-- and every bucket parsed and written is a Lua string to make (with all 10 buckets written, a
-- decision takes 7.6 µs of server time, twice the fixed window's: scripts/limiter-lua-ab.mjs).
local function sliding_window(key, L, W, G, cost, now)
  local B = W / G
  local v = redis.call('GET', key)
  local counts = {}
  for j = 0, B do counts[j] = 0 end
  local time = now
  if v then
    local bar = find(v, '|', 1, true)
    local index = tonumber(sub(v, 1, bar - 1))
    if now < index * G then time = index * G end
    local shift = floordiv(time, G) - index
    for j, n in string.gmatch(sub(v, bar + 1), '(%d+)=(%d+)') do
      j = tonumber(j) - shift
      if j >= 0 then counts[j] = tonumber(n) end
    end
  end
  local c = floordiv(time, G)
  local r = time - c * G
  local recent = 0
  for j = 1, B do recent = recent + counts[j] end
  local old = counts[0]
  local scaled = G * recent + old * (G - r)
  if scaled + cost * G <= L * G then
    local reset = window_reset(counts, B, c, G, time, cost)
    counts[B] = counts[B] + cost
    local parts, p = {}, 0
    for j = 0, B do
      local n = counts[j]
      if n > 0 then
        p = p + 1
        parts[p] = count_text(j) .. '=' .. count_text(n)
      end
    end
    return true, floordiv(L * G - scaled - cost * G, G), reset, 0, key, int(c) .. '|' .. table.concat(parts, ',') .. ',', ttl(reset, now)
  end
  local retry = -1
  if cost <= L then
    local room = L - cost
    for s = 0, B + 1 do
      local o = 0
      if s <= B then o = counts[s] end
      local start = 0
      if s == 0 then start = r end
      local room_scaled = room * G - G * recent
      local found = nil
      if room_scaled >= 0 then
        local rr = start
        if o > 0 then rr = max(start, G - floordiv(room_scaled, o)) end
        if rr <= G - 1 then found = (c + s) * G + rr end
      end
      if found then
        retry = found - now
        break
      end
      if s + 1 <= B then recent = recent - counts[s + 1] end
    end
  end
  return false, max(0, floordiv(L * G - scaled, G)), window_reset(counts, B, c, G, time, 0), retry, nil
end

