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
             in the batch, then S specs of 5 values: algorithm (a string: 'd' sliding-log as a
             string, 'z' sliding-log as a sorted set, 'w' sliding-window, 'f' fixed-window, 'g'
             gcra), limit, window ms, param (bucket ms for 'w', burst for 'g', else 0), block
             ms (0: none; else a refusal of this limit blocks it for that long, in the key
             '<its key>|b' = the block's end in ms, and it reads that key first: lib/limiter-block.lua);
             then per entry: now ('' for Redis TIME), cost,
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

-- #include lib/limiter-head.lua

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

-- #include lib/limiter-windows.lua
-- #include lib/sliding-log.lua
local out = { 0 }
local o = 1
local k = 1
local writes = {}
local fence_base = args[3]
local specs = args[4]
local SA, SL, SW, SP, SB = {}, {}, {}, {}, {}
for i = 1, specs do
  local b = 5 + 5 * (i - 1)
  SA[i], SL[i], SW[i], SP[i], SB[i] = args[b], args[b + 1], args[b + 2], args[b + 3], args[b + 4]
end
local a = 5 + 5 * specs
-- #include lib/limiter-block.lua
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
      local ok, remaining, reset, retry, wkey, wvalue, wttl, wfn
      -- Only a limit with a block length reads its block: no call more for the others.
      local blocked = 0
      if SB[si] > 0 then blocked = block_of(KEYS[k], now) end
      if blocked > 0 then
        ok, remaining, reset, retry = false, 0, blocked, blocked - now
      else
        ok, remaining, reset, retry, wkey, wvalue, wttl, wfn =
          decide(SA[si], KEYS[k], SL[si], SW[si], SP[si], cost, now)
      end
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
        -- A refusal blocks a limit with a block length that refused and was not blocked
        -- already, unless the cost can never pass (-1): its verdict then names the block's end.
        local si = args[first_spec + j - 1]
        local bl = SB[si]
        if bl > 0 and out[at] == 0 and out[at + 3] >= 0 then
          local key = KEYS[first_key + j - 1]
          if block_of(key, now) == 0 then
            local until_at = now + bl
            redis.call('SET', key .. '|b', int(until_at), 'PX', bl + slack)
            out[at + 2], out[at + 3] = max(out[at + 2], until_at), max(out[at + 3], bl)
          end
        end
      end
    end
  end
end
out[1] = server_now or 0
return out
