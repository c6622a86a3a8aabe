--[[
  limiter-adjust: one state operation on the limits of one subject (the Store contract's
  limiterAdjust: get, delete, set, reward, penalty, block), atomically. The model is
  src/windows/limits/adjust.ts with the memory store's adjust (src/store/memory/limiter.ts); the
  conformance suite limiter-adjust runs both. The states are limiter-take's (same keys, same
  values, its functions included); a limit's block is '<its key>|b' (lib/limiter-block.lua).

  KEYS[1i]   limit i's state key, in order (all of one {hash tag}: one slot).
  ARGV[1]    one JSON array: op ('get', 'delete', 'set', 'reward', 'penalty', 'block'), points,
             block ms, now ('' for Redis TIME), the TTL slack for the server's time and for a
             caller's, then per key 4 values: algorithm code, limit, window ms, param (as
             limiter-take's specs), then notAfter ('' for none): a reward at or after it
             changes nothing and answers as 'get'.
  Returns    a flat array of integers: status (0 done; 1 refused, nothing changed: a penalty
             would take a limit's usage x window past 2^52), now, then per key the state after
             the operation (for 'delete' before it): used, remaining, resetAt, blockedUntil (0: none)
]]

-- #include lib/limiter-head.lua
local args = cjson.decode(ARGV[1])
local op, points, block_ms, now = args[1], args[2], args[3], args[4]
local slack = args[6]
if now == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  slack = args[5]
end
local not_after = args[7 + 4 * #KEYS]
if not_after ~= nil and not_after ~= '' and now >= not_after then op = 'get' end

local function ttl(at, t)
  return max(1, at - t) + slack
end

local function expire(key, at, t)
  redis.call('PEXPIRE', key, ttl(at, t))
end

-- #include lib/limiter-windows.lua
-- #include lib/sliding-log.lua
-- #include lib/limiter-block.lua

local function decide(alg, key, L, W, p, cost, t)
  if alg == 'g' then return gcra(key, L, W, p, cost, t) end
  if alg == 'd' then return sliding_log(key, L, W, cost, t) end
  if alg == 'z' then return sliding_log_zset(key, L, W, cost, t) end
  if alg == 'f' then return fixed_window(key, L, W, cost, t) end
  return sliding_window(key, L, W, p, cost, t)
end

-- The spec with its capacity raised to the usage cap, floor(2^52 / window) (adjust.ts, capped):
-- its answer at cost 0 is cap - used, and it admits what keeps the usage within the cap.
local function capped(alg, L, W, p)
  local cap = floordiv(4503599627370496, W)
  if alg == 'g' then return L, cap, cap end
  return cap, p, cap
end

local function usage(alg, key, L, W, p)
  local cL, cp, cap = capped(alg, L, W, p)
  local _, remaining = decide(alg, key, cL, W, cp, 0, now)
  return cap - remaining
end

-- Charges `cost` whatever the limit (within the cap, checked before).
local function charge(alg, key, L, W, p, cost)
  if cost <= 0 then return end
  local cL, cp = capped(alg, L, W, p)
  local ok, _, _, _, wkey, wvalue, wttl, wfn = decide(alg, key, cL, W, cp, cost, now)
  if not ok then return end
  if wfn then
    wfn()
  else
    redis.call('SET', wkey, wvalue, 'PX', wttl)
  end
end

local n = #KEYS
local function spec(i)
  local b = 7 + 4 * (i - 1)
  return args[b], args[b + 1], args[b + 2], args[b + 3]
end

local out = { 0, now }
local function state(i)
  local alg, L, W, p = spec(i)
  local key = KEYS[i]
  local _, remaining, reset = decide(alg, key, L, W, p, 0, now)
  local o = #out
  out[o + 1], out[o + 2], out[o + 3], out[o + 4] = usage(alg, key, L, W, p), remaining, reset, block_of(key, now)
end

if op == 'penalty' then
  -- All or nothing: every limit is checked before any is charged.
  for i = 1, n do
    local alg, L, W, p = spec(i)
    local cL, cp = capped(alg, L, W, p)
    if not decide(alg, KEYS[i], cL, W, cp, points, now) then return { 1, now } end
  end
end

for i = 1, n do
  local alg, L, W, p = spec(i)
  local key = KEYS[i]
  if op == 'delete' then
    state(i)
    redis.call('DEL', key, key .. '|b')
  elseif op == 'block' then
    if block_ms > 0 then
      redis.call('SET', key .. '|b', int(now + block_ms), 'PX', block_ms + slack)
    else
      redis.call('DEL', key .. '|b')
    end
  elseif op == 'penalty' then
    charge(alg, key, L, W, p, points)
  elseif op == 'set' then
    redis.call('DEL', key)
    charge(alg, key, L, W, p, points)
  elseif op == 'reward' then
    if alg == 'g' then
      -- The arrival time moves back by points x window / limit, exactly; at or behind now: no state.
      local v = redis.call('GET', key)
      if v then
        local sq, sf = pair(v)
        local sum = sf - points * W
        local carry = floordiv(sum, L)
        local q, f = sq + carry, sum - carry * L
        if sq < now or q < now or (q == now and f == 0) then
          redis.call('DEL', key)
        else
          local at = q
          if f > 0 then at = q + 1 end
          redis.call('SET', key, int(q) .. ':' .. int(f), 'PX', ttl(at, now))
        end
      end
    else
      -- The usage left, charged now on no state.
      local left = usage(alg, key, L, W, p) - points
      redis.call('DEL', key)
      charge(alg, key, L, W, p, left)
    end
  end
  if op ~= 'delete' then state(i) end
end
return out
