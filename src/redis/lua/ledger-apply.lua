--[[
  ledger-apply: admit a signature into an owner's window and apply its deltas, atomically.
  Every key shares the owner's {hash tag}, so Redis Cluster runs the whole step on one node.

  KEYS[1]  window     list    signatures, oldest first
  KEYS[2]  orders     list    the order of each window entry ('' when none), parallel to KEYS[1]
  KEYS[3]  balances   hash    field -> amount (canonical decimal string, any precision)
  KEYS[4]  state      hash    h: horizon (highest evicted order), seq: journal counter
  KEYS[5]  scopes     hash    '<#scope>:<scope><field>' -> this owner's total booked under scope
  KEYS[6]  journal    stream  one entry per applied signature
  ARGV[1]  signature
  ARGV[2]  capacity          positive integer
  ARGV[3]  order             canonical integer string, '' when none
  ARGV[4]  horizon           '1' to answer stale at or below the horizon, '0' not to track it
  ARGV[5]  scope             '' when none
  ARGV[6]  meta              JSON text, '' when none
  ARGV[7]  journal limit     '' keep every entry, '0' keep none, n keep the newest n
  ARGV[8..] field, delta pairs (canonical integer strings)
  Returns  { outcome, seq, field1, balance1, field2, balance2, ... }
           outcome: 'applied' | 'duplicate' | 'stale'; seq is '' unless applied

  Amounts are added as decimal strings: HINCRBY stops at 64 bits and would fail half-way through
  the deltas (a script is not rolled back), so it must not be used here.
]]

-- Compares two canonical integer strings (no '+', no leading zeros, no '-0').
local function cmp(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na and -1 or 1 end
  local x, y = na and a:sub(2) or a, nb and b:sub(2) or b
  local r = 0
  if #x ~= #y then r = (#x < #y) and -1 or 1
  elseif x ~= y then r = (x < y) and -1 or 1 end
  return na and -r or r
end

local function reverse_digits(t)
  local n = #t
  while n > 1 and t[n] == 0 do t[n] = nil; n = n - 1 end
  local s = {}
  for i = n, 1, -1 do s[#s + 1] = string.char(48 + t[i]) end
  return table.concat(s)
end

local function add_mag(x, y)
  local out, carry, i, j = {}, 0, #x, #y
  while i > 0 or j > 0 or carry > 0 do
    local s = carry + (i > 0 and x:byte(i) - 48 or 0) + (j > 0 and y:byte(j) - 48 or 0)
    out[#out + 1] = s % 10
    carry = (s >= 10) and 1 or 0
    i, j = i - 1, j - 1
  end
  return reverse_digits(out)
end

-- x - y for magnitudes with x > y.
local function sub_mag(x, y)
  local out, borrow, i, j = {}, 0, #x, #y
  while i > 0 do
    local s = (x:byte(i) - 48) - borrow - (j > 0 and y:byte(j) - 48 or 0)
    if s < 0 then s = s + 10; borrow = 1 else borrow = 0 end
    out[#out + 1] = s
    i, j = i - 1, j - 1
  end
  return reverse_digits(out)
end

local function add(a, b)
  -- Fast path: below 10^15 both operands and their sum are exact in a double (2^53 ~ 9.007e15).
  if #a <= 15 and #b <= 15 then return string.format('%.0f', tonumber(a) + tonumber(b)) end
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  local x, y = na and a:sub(2) or a, nb and b:sub(2) or b
  if na == nb then
    local r = add_mag(x, y)
    return na and ('-' .. r) or r
  end
  local c = cmp(x, y)
  if c == 0 then return '0' end
  if c > 0 then
    local r = sub_mag(x, y)
    return na and ('-' .. r) or r
  end
  local r = sub_mag(y, x)
  return nb and ('-' .. r) or r
end

local function reply(outcome, seq)
  local out = { outcome, seq }
  local balances = redis.call('HGETALL', KEYS[3])
  for i = 1, #balances do out[#out + 1] = balances[i] end
  return out
end

local signature = ARGV[1]
if redis.call('LPOS', KEYS[1], signature) then return reply('duplicate', '') end

local track = ARGV[4] == '1'
local order = track and ARGV[3] or ''
local horizon = redis.call('HGET', KEYS[4], 'h')
if order ~= '' and horizon and cmp(order, horizon) <= 0 then return reply('stale', '') end

redis.call('RPUSH', KEYS[1], signature)
redis.call('RPUSH', KEYS[2], order)
-- Evict the oldest, one at a time, while over capacity (never a wholesale clear).
local capacity = tonumber(ARGV[2])
local size = redis.call('LLEN', KEYS[1])
local new_horizon = horizon
while size > capacity do
  redis.call('LPOP', KEYS[1])
  local evicted = redis.call('LPOP', KEYS[2])
  if evicted and evicted ~= '' and ((not new_horizon) or cmp(evicted, new_horizon) > 0) then
    new_horizon = evicted
  end
  size = size - 1
end
if new_horizon and new_horizon ~= horizon then redis.call('HSET', KEYS[4], 'h', new_horizon) end

local scope = ARGV[5]
local scope_prefix = #scope .. ':' .. scope
local entry = {}
for i = 8, #ARGV, 2 do
  local field, delta = ARGV[i], ARGV[i + 1]
  redis.call('HSET', KEYS[3], field, add(redis.call('HGET', KEYS[3], field) or '0', delta))
  if scope ~= '' then
    local key = scope_prefix .. field
    redis.call('HSET', KEYS[5], key, add(redis.call('HGET', KEYS[5], key) or '0', delta))
  end
  entry[#entry + 1] = 'd:' .. field
  entry[#entry + 1] = delta
end

local seq = redis.call('HINCRBY', KEYS[4], 'seq', 1)
local limit = ARGV[7]
if limit ~= '0' then
  local now = redis.call('TIME')
  local args = { 'XADD', KEYS[6] }
  if limit ~= '' then args[#args + 1] = 'MAXLEN'; args[#args + 1] = limit end
  args[#args + 1] = '*'
  for _, v in ipairs({ 'seq', seq, 'sig', signature, 's', now[1], 'us', now[2] }) do args[#args + 1] = v end
  if scope ~= '' then args[#args + 1] = 'scope'; args[#args + 1] = scope end
  if ARGV[3] ~= '' then args[#args + 1] = 'order'; args[#args + 1] = ARGV[3] end
  if ARGV[6] ~= '' then args[#args + 1] = 'meta'; args[#args + 1] = ARGV[6] end
  for _, v in ipairs(entry) do args[#args + 1] = v end
  redis.call(unpack(args))
end
return reply('applied', tostring(seq))
