-- What an owner's journal entries before a given one held, so that ledger-resolve.lua can tell
-- what retention dropped (XADD MAXLEN drops the oldest, by seq). Needs string.find/sub/byte as the
-- locals find, sub, byte.
--
-- A trail is '<u><max>' over some of the owner's first entries: u is '1' when one of them had no
-- order (else '0'), max the highest order among them ('' when none had one). Each journal entry's
-- field p is the trail of the entries before it (absent when unknown), so the oldest retained
-- entry's p says what was dropped: exactly the entries with a lower seq. The state hash's field m
-- is '<seq>,<trail of entries 1 .. seq>', valid only while <seq> is the owner's journal counter: a
-- script that does not keep it (an earlier version during a rolling deploy, a store keeping every
-- entry or none, which drops nothing worth a trail) moves the counter on without it, and from then
-- on it counts as unknown. Kept only by stores whose retention drops entries: elsewhere it costs
-- nothing on the apply path.

-- a > b for canonical integer strings (no '+', no leading zeros, no '-0'), without making strings.
local function trail_above(a, b)
  local na, nb = byte(a, 1) == 45, byte(b, 1) == 45
  if na ~= nb then return nb end
  if #a ~= #b then return (#a > #b) ~= na end
  if a == b then return false end
  return (a > b) ~= na
end

-- The trail of the entries 1 .. seq (nil when unknown). `m` is the field as read (false or nil
-- when absent); `fresh`: the owner had no state (nothing booked: an empty trail).
local function trail_at(m, fresh, seq)
  if fresh then return '0' end
  if not m then return nil end
  local c = find(m, ',', 1, true)
  if not c or tonumber(sub(m, 1, c - 1)) ~= seq then return nil end
  return sub(m, c + 1)
end

-- For an entry booked as number `next_seq` (its decimal text) after the entries 1 .. seq, with
-- `order` ('' when none): its journal field p (nil when unknown) and the new m ('-' when unknown).
local function next_trail(m, fresh, seq, next_seq, order)
  local prior = trail_at(m, fresh, seq)
  if not prior then return nil, '-' end
  local trail = prior
  if order == '' then
    if byte(prior, 1) ~= 49 then trail = '1' .. sub(prior, 2) end
  elseif #prior == 1 or trail_above(order, sub(prior, 2)) then
    trail = (byte(prior, 1) == 49 and '1' or '0') .. order
  end
  return prior, next_seq .. ',' .. trail
end
