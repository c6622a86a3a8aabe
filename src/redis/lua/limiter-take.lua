--[[
  limiter-take: rate-limit decisions (DESIGN §3.5). Each entry decides one request against all
  of its limits: every limit admits the cost and is charged, or none is charged and nothing is
  written (a refusal changes no state). Several entries (a batch of concurrent calls) run in
  order, exactly as if decided one after the other. The math is src/limiter/*.ts, line for line;
  a property test runs both on the same sequences and requires identical answers.

  KEYS[1i]   the keys of entry i's limits, in order: one key per limit, two for a sliding-log
             limit (its sorted set, then its hash). All keys of one entry share one {hash tag},
             so on Redis Cluster a batch only holds entries of one hash slot.
             fixed-window    string  '<window start>:<count>'
             sliding-window  string  '<newest bucket index>:<count>,<count>,...' (B + 1 buckets)
             gcra            string  '<q>:<f>'  (TAT = q + f / limit ms)
             sliding-log     zset    score: time, member: '<seq>:<cost>' (unique per request)
                             hash    t: total cost of the members, s: last seq
  ARGV[1]    TTL slack in ms, added to every key's TTL (see redis/limiter-backend.ts)
  ARGV[2..]  per entry: now ('' for Redis TIME), cost, n (number of limits), then per limit:
             algorithm ('l' sliding-log, 's' sliding-window, 'f' fixed-window, 'g' gcra),
             limit, window ms, param (bucket ms for 's', burst for 'g', else 0)
  Returns    per entry: { now, allowed (1|0), then per limit: allowed (1|0), remaining, resetAt,
             retryAfterMs (-1: never, the cost exceeds the limit) }

  Every key written gets a TTL: the instant its state becomes equivalent to no state, plus the
  slack. Correctness never depends on the TTL (a state read after its time decides as empty).
  Integer arithmetic goes through math.fmod (exact for doubles), never a / b rounded and floored.
]]

local function floordiv(a, b)
  local r = math.fmod(a, b)
  local q = (a - r) / b
  if r < 0 then q = q - 1 end
  return q
end

local function ceildiv(a, b)
  local r = math.fmod(a, b)
  local q = (a - r) / b
  if r > 0 then q = q + 1 end
  return q
end

local function int(x) return string.format('%.0f', x) end

local slack = tonumber(ARGV[1])
local server_now = nil
local function time_now()
  if not server_now then
    local t = redis.call('TIME')
    server_now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return server_now
end

local function expire(key, at, now)
  redis.call('PEXPIRE', key, int(math.max(1, at - now) + slack))
end

-- Each decide returns allowed, remaining, resetAt, retry (-1 never), and a commit function.

local function fixed_window(key, L, W, cost, now)
  local v = redis.call('GET', key)
  local start, count
  if v then
    local s, c = string.match(v, '^(%-?%d+):(%d+)$')
    start, count = tonumber(s), tonumber(c)
  end
  local time = now
  if start and now < start then time = start end
  local ws = time - math.fmod(time, W)
  local used = 0
  if start == ws then used = count end
  local wend = ws + W
  if used + cost <= L then
    local reset = time
    if used + cost > 0 then reset = wend end
    return true, L - used - cost, reset, 0, function()
      redis.call('SET', key, int(ws) .. ':' .. int(used + cost))
      expire(key, wend, now)
    end
  end
  local reset = time
  if used > 0 then reset = wend end
  local retry = wend - now
  if cost > L then retry = -1 end
  return false, L - used, reset, retry, nil
end

local function gcra(key, L, W, burst, cost, now)
  local v = redis.call('GET', key)
  local q, f = now, 0
  if v then
    local sq, sf = string.match(v, '^(%-?%d+):(%d+)$')
    if tonumber(sq) >= now then q, f = tonumber(sq), tonumber(sf) end
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
    return true, floordiv(burst * W - ahead, W), reset, 0, function()
      redis.call('SET', key, int(q2) .. ':' .. int(f2))
      local at = q2
      if f2 > 0 then at = q2 + 1 end
      expire(key, at, now)
    end
  end
  local held = (q - now) * L + f
  local reset = q
  if f > 0 then reset = q + 1 end
  local retry = -1
  if cost <= burst then retry = q + ceildiv(f - (burst - cost) * W, L) - now end
  return false, math.max(0, floordiv(burst * W - held, W)), reset, retry, nil
end

local function sliding_window(key, L, W, G, cost, now)
  local B = W / G
  local v = redis.call('GET', key)
  local counts = {}
  for j = 0, B do counts[j] = 0 end
  local time = now
  local index
  if v then
    local si, rest = string.match(v, '^(%-?%d+):(.*)$')
    index = tonumber(si)
    if now < index * G then time = index * G end
    local c = floordiv(time, G)
    local shift = c - index
    local j = 0
    for n in string.gmatch(rest, '%d+') do
      if j >= shift and j - shift <= B then counts[j - shift] = tonumber(n) end
      j = j + 1
    end
  end
  local c = floordiv(time, G)
  local r = time - c * G
  local recent = 0
  for j = 1, B do recent = recent + counts[j] end
  local old = counts[0]
  local scaled = G * recent + old * (G - r)
  local function reset_of(extra)
    for j = B, 0, -1 do
      local n = counts[j]
      if j == B then n = n + extra end
      if n > 0 then return (c + j + 1) * G end
    end
    return time
  end
  if scaled + cost * G <= L * G then
    local reset = reset_of(cost)
    return true, floordiv(L * G - scaled - cost * G, G), reset, 0, function()
      counts[B] = counts[B] + cost
      local parts = {}
      for j = 0, B do parts[j + 1] = int(counts[j]) end
      redis.call('SET', key, int(c) .. ':' .. table.concat(parts, ','))
      expire(key, reset, now)
    end
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
        if o > 0 then rr = math.max(start, G - floordiv(room_scaled, o)) end
        if rr <= G - 1 then found = (c + s) * G + rr end
      end
      if found then
        retry = found - now
        break
      end
      if s + 1 <= B then recent = recent - counts[s + 1] end
    end
  end
  return false, math.max(0, floordiv(L * G - scaled, G)), reset_of(0), retry, nil
end

local function sliding_log(zkey, hkey, L, W, cost, now)
  local cutoff = now - W
  local th = redis.call('HMGET', hkey, 't', 's')
  local total = tonumber(th[1]) or 0
  local seq = tonumber(th[2]) or 0
  local live = total
  local expired = redis.call('ZRANGEBYSCORE', zkey, '-inf', int(cutoff))
  for _, m in ipairs(expired) do live = live - tonumber(string.match(m, ':(%d+)$')) end
  local newest = nil
  if live > 0 then
    local last = redis.call('ZRANGE', zkey, -1, -1, 'WITHSCORES')
    newest = tonumber(last[2])
  end
  if live + cost <= L then
    local reset = now
    if cost > 0 then
      reset = math.max(newest or now, now) + W
    elseif newest then
      reset = newest + W
    end
    return true, L - live - cost, reset, 0, function()
      if #expired > 0 then redis.call('ZREMRANGEBYSCORE', zkey, '-inf', int(cutoff)) end
      seq = seq + 1
      redis.call('ZADD', zkey, int(now), int(seq) .. ':' .. int(cost))
      redis.call('HSET', hkey, 't', int(live + cost), 's', int(seq))
      expire(zkey, reset, now)
      expire(hkey, reset, now)
    end
  end
  local retry = -1
  if cost <= L then
    local need = live + cost - L
    local freed = 0
    -- Oldest live entries first, a page at a time, until the rest plus this cost fits.
    local offset = 0
    while freed < need do
      local page = redis.call('ZRANGEBYSCORE', zkey, '(' .. int(cutoff), '+inf', 'WITHSCORES', 'LIMIT', offset, 64)
      for k = 1, #page, 2 do
        freed = freed + tonumber(string.match(page[k], ':(%d+)$'))
        if freed >= need then
          retry = tonumber(page[k + 1]) + W - now
          break
        end
      end
      offset = offset + 64
    end
  end
  local reset = now
  if newest then reset = newest + W end
  return false, L - live, reset, retry, nil
end

local out = {}
local a = 2
local k = 1
local entries = 0
while a <= #ARGV do
  local now = ARGV[a]
  if now == '' then now = time_now() else now = tonumber(now) end
  local cost = tonumber(ARGV[a + 1])
  local n = tonumber(ARGV[a + 2])
  a = a + 3
  local reply = { int(now), 1 }
  local commits = {}
  local all = true
  for j = 1, n do
    local alg, L, W, p = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
    a = a + 4
    local ok, remaining, reset, retry, commit
    if alg == 'l' then
      ok, remaining, reset, retry, commit = sliding_log(KEYS[k], KEYS[k + 1], L, W, cost, now)
      k = k + 2
    else
      if alg == 'f' then
        ok, remaining, reset, retry, commit = fixed_window(KEYS[k], L, W, cost, now)
      elseif alg == 's' then
        ok, remaining, reset, retry, commit = sliding_window(KEYS[k], L, W, p, cost, now)
      else
        ok, remaining, reset, retry, commit = gcra(KEYS[k], L, W, p, cost, now)
      end
      k = k + 1
    end
    if ok then
      commits[#commits + 1] = commit
      reply[#reply + 1] = 1
    else
      all = false
      reply[#reply + 1] = 0
    end
    reply[#reply + 1] = int(remaining)
    reply[#reply + 1] = int(reset)
    reply[#reply + 1] = int(retry)
  end
  if all and cost > 0 then
    for _, commit in ipairs(commits) do commit() end
  end
  if not all then reply[2] = 0 end
  entries = entries + 1
  out[entries] = reply
end
return out
