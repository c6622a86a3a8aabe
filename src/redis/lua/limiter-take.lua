--[[
  limiter-take: rate-limit decisions (DESIGN §3.5). Each entry decides one request against all
  of its limits: every limit admits the cost and is charged, or none is charged and nothing is
  written (a refusal changes no state). Several entries (a batch of concurrent calls) run in
  order, exactly as if decided one after the other. The math is src/windows/limits/*.ts, line for line;
  a property test runs both on the same sequences and requires identical answers.

  KEYS[1i]   the keys of entry i's limits, in order, one key per limit. All keys of one entry
             share one {hash tag}; on Redis Cluster a batch holds entries of one slot, or of one
             master in the node variant (lib/node-batch.lua).
             fixed-window    string  '<window start>:<count>'
             sliding-window  string  (code 'w') '<newest bucket index>|' then '<j>=<count>,' per
                                     bucket with a count (j: 0 the oldest of B + 1, B the newest)
             gcra            string  '<q>:<f>'  (TAT = q + f / limit ms)
             sliding-log     string  (code 'd', limit <= 512) '<total>,<newest>,<oldest>|'
                                     then '<delta>,' or '<delta>:<cost>,' per entry, times
                                     ascending, each a delta from the previous entry's (two
                                     requests in one ms: two entries, the second '0,')
                                     zset    (code 'z', limit > 512) entries: score time, member '<seq>:<cost>'
                                     (unique per request); totals: members '#t' total cost, '#s'
                                     last seq, '#l' newest time, '#o' oldest time, scored 2^52 +
                                     value (with '#o' the expired scan is skipped while nothing
                                     can have expired)
  ARGV[1]    one flat JSON array of numbers (strings where said): the TTL slacks in ms added to
             every key's TTL, for entries on the server's time and for entries on a caller's
             time (see redis/limiter-ops.ts); the fence base F (server ms); S, the number of distinct limit specs
             in the batch, then S specs of 4 values: algorithm (a string: 'd' sliding-log as a
             string, 'z' sliding-log as a sorted set, 'w' sliding-window, 'f' fixed-window, 'g'
             gcra), limit, window ms, param (bucket ms for 'w', burst for 'g', else 0); then per entry: now ('' for Redis TIME), cost,
             fence (0: none; else the entry is not decided, and charges nothing, once the server's
             TIME is past F + fence: its caller has been answered without the store, see
             redis/limiter-ops.ts), n (number of limits), then n spec numbers (1-based, into
             the specs above), one per limit, in key order. One JSON argument: cjson decodes it into numbers at once, where
             ~4 arguments per entry would each be a Lua string to convert (and a string for the
             client to encode).
  Returns    one flat array of integers: the server's TIME in ms when the script read it (it does
             for an entry on the server's time or with a fence), else 0; then per entry in order:
             now, allowed (1|0, 2: past its fence, not decided), then per limit: allowed (1|0),
             remaining, resetAt, retryAfterMs (-1: never, the cost exceeds the limit); all 0 for
             an entry past its fence

  Server time per decision is what costs (a local Redis runs this script for 128 decisions in
  well under a millisecond: scripts/limiter-lua-ab.mjs): every algorithm is one GET and, when
  admitted, one SET PX (value and TTL in one call), and the reply is integers. A sliding log up to
  limit 512 is a string too (a sorted set takes three calls and up to 3x the server time there:
  ~14 µs at any limit, scripts/sliding-log-cost.mjs, where the string takes ~4.6 µs at limit 50,
  scripts/limiter-lua-ab.mjs); above, a sorted set.

  Every key written gets a TTL: the instant its state becomes equivalent to no state, plus the
  slack. Correctness never depends on the TTL (a state read after its time decides as empty).
  Integer arithmetic goes through math.fmod (exact for doubles), never a / b rounded and floored.
]]

-- Library functions as locals: a global and a field lookup fewer per call, in the hot paths.
local find, sub, match, fmod, max = string.find, string.sub, string.match, math.fmod, math.max
local function floordiv(a, b)
  local r = fmod(a, b)
  local q = (a - r) / b
  if r < 0 then q = q - 1 end
  return q
end

local function ceildiv(a, b)
  local r = fmod(a, b)
  local q = (a - r) / b
  if r > 0 then q = q + 1 end
  return q
end

-- Every number written into a value goes through int() (lib/int-text.lua): Lua's own
-- number-to-string ('%.14g') is exact only below 1e14, and a client clock or a cost may pass it
-- (limit x window is allowed up to 2^53).
-- #include lib/int-text.lua

-- '<a>:<b>' into two numbers (a plain find is cheaper than a pattern with captures).
local function pair(v)
  local i = find(v, ':', 1, true)
  return tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1))
end

local args = cjson.decode(ARGV[1])
-- TTL slack: the server's own time (args[1]) or a caller's (args[2], client-clock entries).
local server_slack, client_slack = args[1], args[2]
local slack = server_slack
local server_now = nil
local function time_now()
  if not server_now then
    local t = redis.call('TIME')
    server_now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return server_now
end

-- Numbers go to redis.call as they are: Redis formats them itself (in C, '%.17g', exact for
-- integers), cheaper than building the string in Lua.
local function ttl(at, now)
  return max(1, at - now) + slack
end

local function expire(key, at, now)
  redis.call('PEXPIRE', key, ttl(at, now))
end

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

-- #include lib/sliding-log.lua
local out = { 0 }
local o = 1
local k = 1
local writes = {}
local fence_base = args[3]
local specs = args[4]
local SA, SL, SW, SP = {}, {}, {}, {}
for i = 1, specs do
  local b = 5 + 4 * (i - 1)
  SA[i], SL[i], SW[i], SP[i] = args[b], args[b + 1], args[b + 2], args[b + 3]
end
local a = 5 + 4 * specs
local function decide(alg, key, L, W, p, cost, now)
  if alg == 'g' then return gcra(key, L, W, p, cost, now) end
  if alg == 'd' then return sliding_log(key, L, W, cost, now) end
  if alg == 'z' then return sliding_log_zset(key, L, W, cost, now) end
  if alg == 'f' then return fixed_window(key, L, W, cost, now) end
  return sliding_window(key, L, W, p, cost, now) -- 'w'
end

local count = #args
while a <= count do
  local now = args[a]
  if now == '' then
    now = time_now()
    slack = server_slack
  else
    slack = client_slack
  end
  local cost = args[a + 1]
  local fence = args[a + 2]
  local n = args[a + 3]
  a = a + 4
  local head = o + 1
  out[head] = now
  out[head + 1] = 1
  o = o + 2
  if fence > 0 and time_now() > fence_base + fence then
    -- Past its fence: answered without the store already. Not decided, nothing read or written.
    out[head + 1] = 2
    for _ = 1, 4 * n do
      o = o + 1
      out[o] = 0
    end
    a = a + n
    k = k + n
  else
    local first_spec, first_key = a, k
    local w = 0
    local all = true
    for j = 1, n do
      local si = args[a]
      a = a + 1
      local ok, remaining, reset, retry, wkey, wvalue, wttl, wfn =
        decide(SA[si], KEYS[k], SL[si], SW[si], SP[si], cost, now)
      k = k + 1
      if ok then
        out[o + 1] = 1
        writes[w + 1], writes[w + 2], writes[w + 3], writes[w + 4] = wkey, wvalue, wttl, wfn or false
        w = w + 4
      else
        all = false
        out[o + 1] = 0
      end
      out[o + 2], out[o + 3], out[o + 4] = remaining, reset, retry
      o = o + 4
    end
    if all and cost > 0 then
      for i = 1, w, 4 do
        if writes[i + 3] then
          writes[i + 3]()
        else
          redis.call('SET', writes[i], writes[i + 1], 'PX', writes[i + 2])
        end
      end
    end
    if not all then
      out[head + 1] = 0
      -- Nothing was charged: a limit that would have admitted reports itself as it is now (its
      -- answer to a cost of 0), not as it would have been after this request.
      for j = 1, n do
        local at = head + 2 + 4 * (j - 1)
        if out[at] == 1 then
          local si = args[first_spec + j - 1]
          local _, remaining, reset = decide(SA[si], KEYS[first_key + j - 1], SL[si], SW[si], SP[si], 0, now)
          out[at + 1], out[at + 2] = remaining, reset
        end
      end
    end
  end
end
out[1] = server_now or 0
return out
