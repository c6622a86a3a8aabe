-- ledger-book: one ledger apply (window check with horizon, balances, scope totals, journal, the
-- runs' replay marks) exactly as ledger-apply.lua books it, as a function, so that the other
-- scripts that book (stream-apply-ack.lua: the apply and the stream XACK in one step;
-- ledger-resolve.lua: an entry it proved was never applied) book the same way.
--
-- The including script first includes lib/int-compare.lua, lib/int-text.lua, lib/decimal-add.lua,
-- defines `local find, sub, match, byte = string.find, string.sub, string.match, string.byte`,
-- includes lib/journal-trail.lua, and defines the locals `args` (the decoded entries), `limit` (the
-- journal limit) and `run` (the store's run id), as ledger-apply.lua's header describes them.

-- Runs remembered per owner: a lost reply is still recognised after 7 other processes wrote the
-- owner while its run reconnected (one or two write an owner when consumers partition by owner);
-- ~25 bytes each, so at most ~200 bytes per owner. Runs that stopped are pushed out by new ones.
local RUNS = 8
local OUTCOME = { a = 'applied', d = 'duplicate', s = 'stale' }

-- A limit that drops entries: the journal trail is kept (see lib/journal-trail.lua).
local trimmed = limit ~= '' and limit ~= '0'
local mark = '\254' .. run .. ' '

-- The runs list with this run's entry `<call> <letter><seq>` first and its older entry dropped, at
-- most RUNS entries. `at`: where this run's mark is in `runs` (nil when absent).
local function remember(runs, at, call, letter, seq)
  if at == 1 then
    -- This run wrote the owner last (the common case: one writer per owner): replaced in place.
    local rest = find(runs, '\254', #mark + 1, true)
    if rest then return mark .. call .. ' ' .. letter .. seq .. sub(runs, rest) end
  end
  local out, kept = { '', run .. ' ' .. call .. ' ' .. letter .. seq }, 1
  for e in string.gmatch(runs, '[^\254]+') do
    if kept >= RUNS then break end
    if sub(e, 1, #run + 1) ~= run .. ' ' then
      out[#out + 1] = e
      kept = kept + 1
    end
  end
  out[#out + 1] = ''
  return table.concat(out, '\254')
end

-- The balances JSON after adding the deltas args[first], args[first + 1] .. args[last - 1],
-- args[last]. The common case, one field of plain characters in an object that holds only it (or
-- nothing yet), is spliced as text: it is what cjson writes for that object ({"<field>":"<amount>"},
-- no escapes in such a name), without decoding and encoding it again. Each string a script makes
-- costs ~0.3-0.5 µs (allocated, copied, hashed: scripts/redis-ledger-lua-parts.mjs), so the checks
-- read bytes and positions instead of cutting pieces out, and the head of each field is made once
-- per script.
local heads = {} -- field -> '{"<field>":"', or false when the field is not plain
local function add_balances(balances, args, first, last)
  if first + 1 == last then
    local field = args[first]
    local head = heads[field]
    if head == nil then
      head = not find(field, '[^A-Za-z0-9_%-]') and ('{"' .. field .. '":"')
      heads[field] = head
    end
    if head then
      if balances == '{}' then return head .. add('0', args[last]) .. '"}' end
      local n = #balances
      -- '{"<field>":"' at the start, '"}' at the end, and no other quote: the whole object.
      if find(balances, head, 1, true) == 1 and find(balances, '"', #head + 1, true) == n - 1 and byte(balances, n) == 125 then
        return head .. add(sub(balances, #head + 1, n - 2), args[last]) .. '"}'
      end
    end
  end
  local amounts = cjson.decode(balances)
  for i = first, last, 2 do
    amounts[args[i]] = add(amounts[args[i]] or '0', args[i + 1])
  end
  return cjson.encode(amounts)
end

-- Whether `\255<signature>\255` occurs in `state` from `from` (the 0xFF before the first signature)
-- on. The needle is searched with its delimiters, never the bare signature: a plain find tries
-- every position where the needle's first byte occurs, and compares from there to the first byte
-- that differs. With 0xFF first, the only candidates are the window's delimiters, and each compare
-- stops by the next delimiter at the latest (0xFF occurs in no signature), so the search reads the
-- window's bytes about once: linear in them. The bare signature would be tried at every position
-- of every entry that starts like it, each compare running the length of the shared prefix:
-- 'x' x N + '1' against a window holding 'x' x N and 'x' x N + '0' costs ~N^2 byte compares
-- (seconds of Redis time at 256 KB; scripts/signature-cost.mjs). The needle costs one string per
-- entry that has a window (~0.3-0.5 µs), the price of a bound that does not depend on the input.
local function in_window(state, needle, from)
  return find(state, needle, from, true) ~= nil
end

local scope_prefixes = {} -- scope -> 't:<#scope>:<scope>', made once per script

local now_s, now_us -- Redis TIME, read once per script and only when a journal entry is written
local stamped = 0 -- journal entries written by this script so far
-- field -> 'd:<field>', the journal's field of a delta, made once per script.
local delta_fields = setmetatable({}, { __index = function(t, field)
  local v = 'd:' .. field
  t[field] = v
  return v
end })

-- What booking the entry whose fields start at args[a] reads of the owner's state hash, in one
-- HMGET: s, r, then the scope totals of its deltas (when it has a scope), then m when trimmed.
-- Returns those values, the prefix of its scope totals' fields ('t:<#scope>:<scope>', when it
-- books some) and the scope total's field of a lone delta.
local function read_state(state_key, a)
  local scope, n = args[a + 5], args[a + 7]
  local first = a + 8 -- deltas: args[first .. first + 2n - 1]
  if scope == '' or n == 0 then
    return trimmed and redis.call('HMGET', state_key, 's', 'r', 'm') or redis.call('HMGET', state_key, 's', 'r')
  end
  local scope_prefix = scope_prefixes[scope]
  if not scope_prefix then
    scope_prefix = 't:' .. int(#scope) .. ':' .. scope
    scope_prefixes[scope] = scope_prefix
  end
  if n == 1 then
    local total_field = scope_prefix .. args[first]
    return trimmed and redis.call('HMGET', state_key, 's', 'r', total_field, 'm')
      or redis.call('HMGET', state_key, 's', 'r', total_field), scope_prefix, total_field
  end
  local wanted = { 'HMGET', state_key, 's', 'r' }
  for i = first, first + 2 * n - 1, 2 do wanted[#wanted + 1] = scope_prefix .. args[i] end
  if trimmed then wanted[#wanted + 1] = 'm' end
  return redis.call(unpack(wanted)), scope_prefix
end

-- Books the entry whose fields start at args[a] on the owner's keys: its reply (JSON text, see the
-- header of ledger-apply.lua) and where the next entry's fields start. `settled`: the caller has
-- proved the entry was never applied (ledger-resolve.lua), so it is booked whatever the horizon,
-- and it is no call of a run (args[a], the call, is not read: a = 0 for an entry without one),
-- so no replay mark is checked or written. `got`, `scope_prefix`, `total_field`: what
-- read_state(state_key, a) answered, when the caller has read it already (nothing written since).
local function book(state_key, journal_key, a, settled, got, scope_prefix, total_field)
  local call, signature, capacity, order = args[a], args[a + 1], args[a + 2], args[a + 3]
  local track, scope, meta, n = args[a + 4] == 1, args[a + 5], args[a + 6], args[a + 7]
  local first = a + 8 -- deltas: args[first .. first + 2n - 1]
  if not got then got, scope_prefix, total_field = read_state(state_key, a) end
  a = first + 2 * n

  -- The state is read in place: positions, and only the pieces needed cut out (every string a
  -- script makes is allocated, copied and hashed: ~0.3-0.5 µs each, scripts/redis-ledger-lua-parts.mjs).
  local balances, seq, count, horizon = '{}', 0, 0, ''
  local runs = got[2] or '\254'
  local state = got[1]
  local orders_at, window_at -- the first order, and the 0xFF before the first signature
  if state then
    local p = find(state, '\255', 1, true)
    local c1 = find(state, ',', p + 1, true)
    local c2 = find(state, ',', c1 + 1, true)
    local c3 = find(state, ',', c2 + 1, true) -- seq, count and horizon hold no comma
    balances = sub(state, 1, p - 1)
    seq, count, horizon = tonumber(sub(state, p + 1, c1 - 1)), tonumber(sub(state, c1 + 1, c2 - 1)), sub(state, c2 + 1, c3 - 1)
    orders_at, window_at = c3 + 1, find(state, '\255', c3 + 1, true)
  end

  local outcome, reply_seq, judged, replayed = 'applied', '', track and order or '', false
  local at = not settled and find(runs, mark, 1, true)
  local last_end = at and find(runs, ' ', at + #mark, true)
  local last = last_end and sub(runs, at + #mark, last_end - 1)
  -- Decimal strings without leading zeros compare as numbers by length, then by text: the common
  -- case (a new call, above the last) is told without parsing the entry.
  if last and (#last > #call or (#last == #call and last >= call)) then
    local letter, last_seq = match(runs, '^(%a)(%d*)\254', last_end + 1)
    local done, asked = tonumber(last), tonumber(call)
    -- An entry this script did not write (no end mark, another letter) is no entry.
    if done and OUTCOME[letter] and done >= asked then
      -- Sent again after a lost reply: answered as it was (an older call cannot come back, its
      -- run sent the next one only after it settled; answered duplicate all the same).
      replayed = true
      if done == asked then
        outcome, reply_seq = OUTCOME[letter], last_seq
      else
        outcome, reply_seq = 'duplicate', ''
      end
    end
  end

  if not replayed then
    if state and in_window(state, '\255' .. signature .. '\255', window_at) then outcome = 'duplicate' end
    if outcome == 'applied' and not settled and judged ~= '' and horizon ~= '' and cmp(judged, horizon) <= 0 then
      outcome = 'stale'
    end
  end

  if outcome == 'applied' and not replayed then
    -- Insert as newest; evict the oldest, one at a time, while over capacity (never a wholesale
    -- clear): the kept orders and signatures start further on in `state`, cut once below.
    local orders, window = '', '\255'
    if state then
      local orders_end = window_at - 1 -- the orders end where the signatures begin
      count = count + 1
      -- At least one kept: a capacity below 1 (only a direct call can send one) keeps the newest.
      while count > capacity and orders_at <= orders_end do
        local c = find(state, ',', orders_at, true)
        if c > orders_at then
          local evicted = sub(state, orders_at, c - 1)
          if horizon == '' or cmp(evicted, horizon) > 0 then horizon = evicted end
        end
        orders_at = c + 1
        window_at = find(state, '\255', window_at + 1, true)
        count = count - 1
      end
      orders, window = sub(state, orders_at, orders_end), sub(state, window_at)
    else
      count = 1 -- capacity >= 1: nothing to evict
    end
    local prior, trail
    if trimmed then prior, trail = next_trail(got[#got], not state, seq, int(seq + 1), order) end
    seq = seq + 1
    reply_seq = int(seq)

    if n > 0 then
      balances = add_balances(balances, args, first, a - 1)
    end
    local state = balances .. '\255' .. reply_seq .. ',' .. int(count) .. ',' .. horizon .. ',' .. orders
      .. judged .. ',' .. window .. signature .. '\255'
    if not settled then runs = remember(runs, at, call, 'a', reply_seq) end
    if settled then
      -- No replay mark: the field r is left as it is.
      local set = { 'HSET', state_key, 's', state }
      if scope ~= '' then
        for i = first, a - 1, 2 do
          set[#set + 1] = scope_prefix .. args[i]
          set[#set + 1] = add(got[3 + (i - first) / 2] or '0', args[i + 1])
        end
      end
      if trail then set[#set + 1] = 'm'; set[#set + 1] = trail end
      redis.call(unpack(set))
    elseif scope == '' or n == 0 then
      if trail then
        redis.call('HSET', state_key, 's', state, 'r', runs, 'm', trail)
      else
        redis.call('HSET', state_key, 's', state, 'r', runs)
      end
    elseif n == 1 then
      local total = add(got[3] or '0', args[first + 1])
      if trail then
        redis.call('HSET', state_key, 's', state, 'r', runs, total_field, total, 'm', trail)
      else
        redis.call('HSET', state_key, 's', state, 'r', runs, total_field, total)
      end
    else
      local set = { 'HSET', state_key, 's', state, 'r', runs }
      for i = first, a - 1, 2 do
        set[#set + 1] = scope_prefix .. args[i]
        set[#set + 1] = add(got[3 + (i - first) / 2] or '0', args[i + 1])
      end
      if trail then set[#set + 1] = 'm'; set[#set + 1] = trail end
      redis.call(unpack(set))
    end

    if limit ~= '0' then
      -- One TIME per batch; its k-th journal entry (k = 0, 1, ...) is stamped TIME + k µs, so
      -- the journal's order across owners (by time) is the order applied. A script spends far
      -- more than 1 µs per entry, so no stamp passes the real time: the next batch's TIME is later.
      if not now_s then
        local now = redis.call('TIME')
        now_s, now_us = tonumber(now[1]), tonumber(now[2])
      end
      local us = now_us + stamped
      local seconds = now_s + math.floor(us / 1000000)
      us = us % 1000000
      stamped = stamped + 1
      if limit == '' and n == 1 and scope == '' and order == '' and meta == '' and not prior then
        -- The common row (every entry kept, one delta, no scope, order or meta), sent without
        -- building a table for it (~1 µs of the ~4.5 an XADD costs from a script: scripts/stream-apply-ack-cost.mjs).
        redis.call('XADD', journal_key, '*', 'seq', reply_seq, 'sig', signature, 's', seconds, 'us', us,
          delta_fields[args[first]], args[first + 1])
      else
        local xadd = { 'XADD', journal_key }
        if limit ~= '' then xadd[3] = 'MAXLEN'; xadd[4] = limit end
        local x = #xadd
        xadd[x + 1], xadd[x + 2], xadd[x + 3], xadd[x + 4], xadd[x + 5] = '*', 'seq', reply_seq, 'sig', signature
        xadd[x + 6], xadd[x + 7], xadd[x + 8], xadd[x + 9] = 's', seconds, 'us', us
        if scope ~= '' then xadd[#xadd + 1] = 'scope'; xadd[#xadd + 1] = scope end
        if order ~= '' then xadd[#xadd + 1] = 'order'; xadd[#xadd + 1] = order end
        if meta ~= '' then xadd[#xadd + 1] = 'meta'; xadd[#xadd + 1] = meta end
        if prior then xadd[#xadd + 1] = 'p'; xadd[#xadd + 1] = prior end
        for i = first, a - 1, 2 do
          xadd[#xadd + 1] = delta_fields[args[i]]
          xadd[#xadd + 1] = args[i + 1]
        end
        redis.call(unpack(xadd))
      end
    end
  end
  if not replayed and outcome ~= 'applied' then
    -- Remembered too: sent again after the signature left the window, a repeat would be applied.
    redis.call('HSET', state_key, 'r', remember(runs, at, call, sub(outcome, 1, 1), ''))
  end
  -- The stored balances are cjson's own output (valid JSON), so the reply is spliced, not re-encoded.
  local was_new = ''
  if not got[1] then was_new = ',1' end
  return '["' .. outcome .. '","' .. reply_seq .. '",' .. balances .. was_new .. ']', a
end

-- Where the fields of the entry after the one at args[a] start, for a script that skips an entry.
local function skip_entry(a)
  return a + 8 + 2 * args[a + 7]
end
