--[[
  ledger-resolve: settles one entry from the owner's window and retained journal (the way out of
  a `stale` answer), in steps of at most ARGV[4] journal entries read, the last of which decides
  and, when it answers applied, books the entry exactly as ledger-apply.lua books a fresh one.
  Both keys share the owner's {hash tag}; the formats are ledger-apply.lua's and
  lib/journal-trail.lua's.

  KEYS[1]  state    hash    s (balances and window), m (the journal trail), scope totals
  KEYS[2]  journal  stream  one entry per applied signature (fields seq, sig, ..., p)
  ARGV[1]  entry    JSON array: signature, capacity, order ('' when none), horizon (1 or 0),
                    scope ('' when none), meta JSON ('' when none), n, then n field, delta pairs;
                    every amount and order a string
  ARGV[2]  journal limit   '' keep every entry, '0' keep none, n keep the newest n
  ARGV[3]  cursor   '' on the first step; then the cursor the previous step returned
  ARGV[4]  page     the most journal entries one step reads (a positive integer)
  Returns  a JSON array: [outcome, seq, { field: balance, ... }, fresh] once decided, outcome
           'applied' | 'duplicate' | 'unknown', seq '' unless applied, fresh 1 when the owner had no
           state before (the client then registers it again); or ['more', cursor] when the
           journal is longer than a step reads: call again with that cursor (nothing changed).

  The journal is read newest first (a stale repeat is usually recent) down to its oldest entry,
  then from the newest entry the first step saw up to the newest entry now (what was applied
  between steps). Entries of a stream never change and only the oldest are dropped, so an entry
  read in any step is as good as one read in the last: the last step checks what it reads, the
  window and what was dropped, and decides, atomically. The cursor is
  '<top id> <top seq> <low id> <low seq> <high id> <high seq>': the newest entry the first step
  saw, the oldest read so far ('-' once the oldest was reached), and the newest read upwards.
  Seqs must run without a gap from the oldest retained entry to the owner's counter (a journal
  written in part, a stream deleted or a state recreated under it breaks that): else unknown.

  What was dropped: the oldest retained entry's p (or, with an empty journal, the field m) gives
  whether a dropped entry had no order and the highest order dropped. Only a store whose limit
  drops entries keeps them: with every entry kept nothing is dropped, and with none kept nothing
  is provable once the owner booked an entry (only the window's duplicates are found). Under the assumption that a
  signature always carries the same order (or always none), an absent entry with an order above
  that, or without an order when none without one was dropped, was never applied. Stored state
  from before m and p were kept, or written in part by such a version, has no trail: unknown
  once anything was dropped.
]]

-- #include lib/int-compare.lua

-- #include lib/int-text.lua

-- #include lib/decimal-add.lua

local find, sub, match, byte = string.find, string.sub, string.match, string.byte

-- #include lib/journal-trail.lua

local state_key, journal_key = KEYS[1], KEYS[2]
local args = cjson.decode(ARGV[1])
local signature, order = args[1], args[3]
local limit, page = ARGV[2], tonumber(ARGV[4])
-- No run: the entry is booked settled (see book), with no replay mark.
local run = ''

-- #include lib/ledger-book.lua

-- The first read of a step: 16 entries (~80 µs) find a repeat among the newest, where a stale
-- repeat usually is (just past the window), before reading further.
local FIRST_READ = 16

-- What book reads, read once: s, r, the scope totals of the deltas, m when the limit drops entries.
local got, scope_prefix, total_field = read_state(state_key, 0)
local state = got[1]
-- The balances, the journal counter and the 0xFF before the window's first signature (the
-- state's format is ledger-apply.lua's).
local balances, seq, window_at = '{}', 0, nil
if state then
  local p = find(state, '\255', 1, true)
  local c1 = find(state, ',', p + 1, true)
  local c3 = find(state, ',', find(state, ',', c1 + 1, true) + 1, true) -- after count and horizon
  balances = sub(state, 1, p - 1)
  seq = tonumber(sub(state, p + 1, c1 - 1))
  window_at = find(state, '\255', c3 + 1, true)
end

local function decided(outcome, reply_seq, amounts)
  return '["' .. outcome .. '","' .. reply_seq .. '",' .. amounts .. (state and '' or ',1') .. ']'
end

if state and in_window(state, '\255' .. signature .. '\255', window_at) then
  return decided('duplicate', '', balances)
end

-- One stream entry's seq and sig (ledger-apply.lua writes them first; looked up otherwise).
local function entry_fields(fields)
  if fields[1] == 'seq' and fields[3] == 'sig' then return tonumber(fields[2]), fields[4] end
  local s, g
  for i = 1, #fields, 2 do
    if fields[i] == 'seq' then s = tonumber(fields[i + 1]) elseif fields[i] == 'sig' then g = fields[i + 1] end
  end
  return s, g
end

local function field_of(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end

local unknown = function() return decided('unknown', '', balances) end

-- The scan. `top`, `low`, `high`: { id, seq }; low.id '-' once the oldest entry was read.
local top, low, high
if ARGV[3] ~= '' then
  local t, ts, l, ls, h, hs = string.match(ARGV[3], '^(%S+) (%d+) (%S+) (%d+) (%S+) (%d+)$')
  if not t then return redis.error_reply('ERR ledger-resolve: malformed cursor') end
  top, low, high = { t, tonumber(ts) }, { l, tonumber(ls) }, { h, tonumber(hs) }
end
local budget = page

if not state then
  -- Nothing applied yet, unless a journal outlived its state (then nothing can be proven).
  if redis.call('XLEN', journal_key) > 0 then return unknown() end
else
  if not top then
    local newest = redis.call('XREVRANGE', journal_key, '+', '-', 'COUNT', 1)
    if #newest > 0 then
      local s = entry_fields(newest[1][2])
      if not s then return unknown() end
      top = { newest[1][1], s }
      low, high = { '+', s + 1 }, { newest[1][1], s }
    end
  end
  if top and low[1] ~= '-' then
    -- Downwards, from below the oldest entry read so far (or from the newest, first), in reads
    -- that start small and double: a repeat among the newest entries costs a few of them (each
    -- entry read costs ~5 µs: its fields become Lua strings), not a whole step's worth.
    local want = FIRST_READ
    while true do
      if want > budget then want = budget end
      local from = low[1] == '+' and '+' or '(' .. low[1]
      local entries = redis.call('XREVRANGE', journal_key, from, '-', 'COUNT', want)
      local expected = low[2] - 1
      for _, e in ipairs(entries) do
        local s, g = entry_fields(e[2])
        if s ~= expected or expected < 1 then return unknown() end
        if g == signature then return decided('duplicate', '', balances) end
        expected = expected - 1
        low = { e[1], s }
      end
      budget = budget - #entries
      if #entries < want then
        low = { '-', 0 }
        break
      end
      if budget == 0 then
        return '["more","' .. top[1] .. ' ' .. top[2] .. ' ' .. low[1] .. ' ' .. low[2] .. ' ' .. high[1] .. ' ' .. high[2] .. '"]'
      end
      want = want * 2
    end
  end
  if top then
    -- Upwards, from the newest entry read so far to the newest entry now.
    local entries = redis.call('XRANGE', journal_key, '(' .. high[1], '+', 'COUNT', budget + 1)
    for i, e in ipairs(entries) do
      if i > budget then
        return '["more","' .. top[1] .. ' ' .. top[2] .. ' - 0 ' .. high[1] .. ' ' .. high[2] .. '"]'
      end
      local s, g = entry_fields(e[2])
      if s ~= high[2] + 1 then return unknown() end
      if g == signature then return decided('duplicate', '', balances) end
      high = { e[1], s }
    end
  end

  -- Every retained entry was read. What was dropped: the entries below the oldest retained one,
  -- whose trail is that entry's p; with no entry retained, all of them, whose trail is m.
  local dropped -- their trail, when some were
  local oldest = redis.call('XRANGE', journal_key, '-', '+', 'COUNT', 1)
  if #oldest == 0 then
    if seq > 0 then
      -- m: read with the state when the limit drops entries (got's last value), else now.
      dropped = trail_at(trimmed and got[#got] or redis.call('HGET', state_key, 'm'), false, seq)
      if not dropped then return unknown() end
    end
  else
    -- The newest retained entry is the owner's last: no entry was booked without a journal entry.
    if not top or high[2] ~= seq then return unknown() end
    if entry_fields(oldest[1][2]) ~= 1 then
      dropped = field_of(oldest[1][2], 'p')
      if not dropped or not string.find(dropped, '^[01]%-?%d*$') then return unknown() end
    end
  end
  if dropped then
    local new
    if order == '' then
      new = byte(dropped, 1) == 48
    else
      new = #dropped == 1 or trail_above(order, sub(dropped, 2))
    end
    if not new then return unknown() end
  end
end

-- Never applied: booked as ledger-apply.lua books a fresh entry (settled: whatever the horizon,
-- as the newest of the window, evicting the oldest while over capacity), on the state as read
-- above (nothing was written since).
return (book(state_key, journal_key, 0, true, got, scope_prefix, total_field))
