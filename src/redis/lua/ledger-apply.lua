--[[
  ledger-apply: for each entry, admit its signature into the owner's window and apply its deltas,
  atomically; several entries (a batch of concurrent calls) run in one script, in order, exactly as
  if applied one after the other. Both keys of one entry share the owner's {hash tag}; on Redis
  Cluster a batch only holds entries of one hash slot.

  Entry i (1-based) uses KEYS[2i-1 .. 2i]:
  KEYS[2i-1]  state     hash    w: window signatures (JSON array, oldest first)
                                o: their orders (JSON array of integer strings, '' when none)
                                h: horizon (highest evicted order)   seq: journal counter
                                b: balances (JSON object field -> canonical decimal string)
                                t:<#scope>:<scope><field>: this owner's total booked under scope
  KEYS[2i]    journal   stream  one entry per applied signature
  ARGV[1]     entries   JSON array; entry i is an array of: signature, capacity, order ('' when
                        none), horizon (1 answer stale at or below it, 0 do not track it), scope
                        ('' when none), meta JSON ('' when none), and the array of deltas
                        (field1, delta1, field2, delta2, ...); every amount and order a string
  ARGV[2]     journal limit     '' keep every entry, '0' keep none, n keep the newest n
  Returns     a JSON array, one reply per entry: [outcome, seq, { field: balance, ... }]
              outcome: 'applied' | 'duplicate' | 'stale'; seq is '' unless applied

  The batch travels as one JSON argument and returns as one JSON string: decoding ~100 entries
  with cjson (C) costs less than Redis turning ~10 arguments per entry into Lua strings, and the
  client encodes and parses one string instead of ~1 000 (measured: BENCHMARKS.md, redis-ledger).
  One HMGET reads everything an entry needs and one HSET writes it: the per-apply cost of a
  script is mostly its redis.call()s, so the window, orders and balances are JSON fields of one
  hash instead of lists and hashes of their own (O(capacity) per apply: right for dedup windows
  of a few entries). Amounts are added as decimal strings: HINCRBY stops at 64 bits and could
  fail half-way through the deltas (a script is not rolled back), so it must not be used here.
]]

-- #include lib/int-compare.lua

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

local entries = cjson.decode(ARGV[1])
local limit = ARGV[2]
local replies = {}
local now -- Redis TIME, read once per batch and only when a journal entry is written

for e = 1, #entries do
  local state_key, journal_key = KEYS[2 * e - 1], KEYS[2 * e]
  local entry = entries[e]
  local signature, capacity, order = entry[1], entry[2], entry[3]
  local track, scope, meta, deltas = entry[4] == 1, entry[5], entry[6], entry[7]
  local n = #deltas

  local scope_prefix = 't:' .. #scope .. ':' .. scope
  local wanted = { 'w', 'o', 'h', 'seq', 'b' }
  if scope ~= '' then
    for i = 1, n, 2 do wanted[#wanted + 1] = scope_prefix .. deltas[i] end
  end
  local got = redis.call('HMGET', state_key, unpack(wanted))
  local window = got[1] and cjson.decode(got[1]) or {}
  local horizon = got[3]

  local outcome = 'applied'
  for i = 1, #window do
    if window[i] == signature then outcome = 'duplicate'; break end
  end
  local judged = track and order or ''
  if outcome == 'applied' and judged ~= '' and horizon and cmp(judged, horizon) <= 0 then outcome = 'stale' end

  local balances = got[5] and cjson.decode(got[5]) or {}
  local seq = ''
  if outcome == 'applied' then
    -- Insert as newest; evict the oldest, one at a time, while over capacity (never a wholesale clear).
    local orders = got[2] and cjson.decode(got[2]) or {}
    window[#window + 1] = signature
    orders[#orders + 1] = judged
    local new_horizon = horizon
    while #window > capacity do
      table.remove(window, 1)
      local evicted = table.remove(orders, 1)
      if evicted ~= '' and ((not new_horizon) or cmp(evicted, new_horizon) > 0) then new_horizon = evicted end
    end

    seq = tostring((tonumber(got[4]) or 0) + 1)
    local set = { 'HSET', state_key, 'w', cjson.encode(window), 'o', cjson.encode(orders), 'seq', seq }
    if new_horizon and new_horizon ~= horizon then
      set[#set + 1] = 'h'
      set[#set + 1] = new_horizon
    end
    for i = 1, n, 2 do
      local field, delta = deltas[i], deltas[i + 1]
      balances[field] = add(balances[field] or '0', delta)
      if scope ~= '' then
        set[#set + 1] = scope_prefix .. field
        set[#set + 1] = add(got[6 + (i - 1) / 2] or '0', delta)
      end
    end
    if n > 0 then
      set[#set + 1] = 'b'
      set[#set + 1] = cjson.encode(balances)
    end
    redis.call(unpack(set))

    if limit ~= '0' then
      now = now or redis.call('TIME')
      local args = { 'XADD', journal_key }
      if limit ~= '' then args[#args + 1] = 'MAXLEN'; args[#args + 1] = limit end
      args[#args + 1] = '*'
      for _, v in ipairs({ 'seq', seq, 'sig', signature, 's', now[1], 'us', now[2] }) do args[#args + 1] = v end
      if scope ~= '' then args[#args + 1] = 'scope'; args[#args + 1] = scope end
      if order ~= '' then args[#args + 1] = 'order'; args[#args + 1] = order end
      if meta ~= '' then args[#args + 1] = 'meta'; args[#args + 1] = meta end
      for i = 1, n, 2 do
        args[#args + 1] = 'd:' .. deltas[i]
        args[#args + 1] = deltas[i + 1]
      end
      redis.call(unpack(args))
    end
  end
  replies[e] = { outcome, seq, balances }
end
return cjson.encode(replies)
