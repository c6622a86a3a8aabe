--[[
  stream-publish: the idempotent XADD of onceflow/streams' producer, for a batch of events in call
  order: each event whose idempotency id is in the stream's dedup record (seen within the window)
  answers the entry id it was first written as; any other is appended with XADD and recorded.
  Check and append are one step, so a batch that runs twice (a reply lost, the call sent again)
  writes nothing the second time.

  KEYS[1]  the stream          entries: e = the event (jsonSerializer text), i = its id
  KEYS[2]  dedup ids           hash: idempotency id -> the entry id it was written as
  KEYS[3]  dedup order         list: '<entry id> <idempotency id>', oldest first
  ARGV[1]  window ms           an id is a duplicate while now - (its entry's ms) < window
  ARGV[2]  maxIds              at most this many ids are kept; the oldest goes first
  ARGV[3 + 2k - 1], ARGV[3 + 2k]   event k (k = 1..n): its idempotency id, its encoded text
  Returns  flat, two values per event in order: the entry id, then 1 when it was written now,
           0 when it was a duplicate (the entry id is the first write's)

  Why a hash and a list, not a sorted set or a key per id: ids are recorded in the order their
  entries are appended, which is the order of their entry ids, which are their times (XADD *),
  so the list is already sorted by time and the oldest is always at its head: eviction by time and
  by count is LINDEX/LPOP at the head, O(1), with no score to store (a sorted set holds each id
  twice, in a dict and a skiplist, ~2x the memory of a list element). A key per id with PEXPIRE
  gives time-bounded eviction for free but no count bound, and costs a key (~70 bytes of overhead
  in the keyspace, plus the expires dict) per id. The list element carries the entry id, so
  eviction reads the time from it without a lookup, and an id written again after its window (its
  old element still queued) is not dropped from the hash when its old element leaves: the hash
  is cleared only when it still holds that element's entry id.
]]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stream, ids, order = KEYS[1], KEYS[2], KEYS[3]
local window = tonumber(ARGV[1])
local maxIds = tonumber(ARGV[2])
local n = (#ARGV - 2) / 2
local call = redis.call

-- The ms part of an entry id ('1700000000000-3'): the server's time of its XADD.
local function ms(entry)
  return tonumber(string.match(entry, '^(%d+)'))
end

local len = call('LLEN', order)

-- Drops the head of the order list, and its id from the hash when the hash still holds that entry.
local function pop_head()
  local head = call('LPOP', order)
  local sp = string.find(head, ' ', 1, true)
  local entry, id = string.sub(head, 1, sp - 1), string.sub(head, sp + 1)
  if call('HGET', ids, id) == entry then call('HDEL', ids, id) end
  len = len - 1
end

-- Expired ids leave oldest first. At most n + 16 per call: a stream idle for a long while holds
-- up to maxIds expired ids, and evicting all of them in one call would hold the server for
-- milliseconds; n + 16 per call outpaces what calls add, so the backlog drains over later calls.
-- An expired id not evicted yet is harmless: the check below compares its time with the window.
local budget = n + 16
while budget > 0 and len > 0 do
  local head = call('LINDEX', order, 0)
  if now - ms(head) < window then break end
  pop_head()
  budget = budget - 1
end

local out = {}
for k = 1, n do
  local id, text = ARGV[1 + 2 * k], ARGV[2 + 2 * k]
  local first = call('HGET', ids, id)
  if first and now - ms(first) < window then
    out[2 * k - 1] = first
    out[2 * k] = 0
  else
    local entry = call('XADD', stream, '*', 'e', text, 'i', id)
    call('HSET', ids, id, entry)
    call('RPUSH', order, entry .. ' ' .. id)
    len = len + 1
    -- The count bound: the oldest id leaves. Up to 2 per new id, so a list left longer than
    -- maxIds (maxIds lowered since) shrinks back instead of staying over it.
    if len > maxIds then pop_head() end
    if len > maxIds then pop_head() end
    out[2 * k - 1] = entry
    out[2 * k] = 1
  end
end

-- The record outlives its last write by the window only: once every id in it has expired it is
-- of no use, and a stream that is deleted or no longer published to does not leave it behind.
call('PEXPIRE', ids, window)
call('PEXPIRE', order, window)
return out
