-- What an owner's journal entries before a given one held, so that ledger-resolve.lua can tell
-- what retention dropped (XADD MAXLEN drops the oldest, by seq). Needs cmp (int-compare.lua) and
-- int (int-text.lua).
--
-- The state hash's field m is '<seq>,<u>,<max>': over the owner's entries 1 .. <seq>, u is 1 when
-- one had no order (else 0) and max the highest order ('' when none had one). It is valid only
-- while <seq> is the owner's journal counter: a script that does not keep m (an earlier version
-- during a rolling deploy) moves the counter on without it, and from then on m stays behind and
-- counts as unknown ('-' once a script notices). Each journal entry's field p is '<u>,<max>' over
-- the entries before it (absent when unknown), so the oldest retained entry's p says what was
-- dropped: exactly the entries with a lower seq.

-- The trail of the entries 1 .. seq: u, max; nil when unknown. `m` is the field as read (nil when
-- absent), `fresh` whether the owner had no state (nothing applied yet: an empty trail).
local function trail_at(m, fresh, seq)
  if fresh then return '0', '' end
  if not m then return nil end
  local at, u, max = string.match(m, '^(%d+),([01]),(-?%d*)$')
  if at == nil or tonumber(at) ~= seq then return nil end
  return u, max
end

-- For an entry applied as number seq + 1 with `order` ('' when none): its journal field p (nil when
-- unknown) and the new m.
local function next_trail(m, fresh, seq, order)
  local u, max = trail_at(m, fresh, seq)
  if u == nil then return nil, '-' end
  local prior = u .. ',' .. max
  if order == '' then
    u = '1'
  elseif max == '' or cmp(order, max) > 0 then
    max = order
  end
  return prior, int(seq + 1) .. ',' .. u .. ',' .. max
end
