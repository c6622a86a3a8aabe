--[[
  idempotency-batch: the idempotency operations (DESIGN §3.6, IdempotencyStoreOps) of a batch of
  concurrent calls, in one script: each entry is one begin, complete, renew or release, run in
  order exactly as if the calls had run one after the other. On Redis Cluster a batch holds
  entries of one hash slot (every record is its own {hash tag}), or of one master in the node
  variant (lib/node-batch.lua).

  KEYS[1i]  entry i's record   hash   s: state ('p' in progress | 'c' completed)
                                      h: payload hash   e: expiry ms (the lease's while in
                                      progress, the ttl's once completed)   c: created ms
                                      d: the holder's token (in progress) | the value (completed)
  ARGV[4i-3 .. 4i]  entry i: op, then its three arguments (flat: no JSON to escape a value into
                    and decode out of, and Redis hands each argument over as the string it is):
            'b' begin     payloadHash ('' when payloads are not hashed), token, leaseMs
            'c' complete  token, value (the serialized value), ttlMs
            'n' renew     token, leaseMs, ''
            'r' release   token, '', ''
            leaseMs and ttlMs: positive safe integers as decimal strings
  Returns   one flat array: now (Redis TIME, ms), then three values per entry in order:
            begin     'a', leaseExpiresAt, takeover (1|0)  acquired
                      'c', value, 0                        completed
                      'i', retryAfterMs, 0                 in-progress
                      'm', 0, 0                            mismatch
            complete, renew, release   1 done | 0 refused (no live lease of token: nothing changed), 0, 0
            any op    'e', message, 0    this entry failed (a Redis error: WRONGTYPE, OOM, ...);
                      the entries before and after it ran as they would have alone

  A record is live while now < e; a dead one answers as absent, whether or not Redis has deleted
  it yet (a completed record's key expires at e itself; see begin for an in-progress one).
  One TIME for the whole batch: the script is atomic, so its entries happen at one instant, as
  calls do on the memory store when its clock does not move between them.
]]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local call = redis.call

-- Whether `token` holds a live lease on `key`: in progress ('p'), held by `token` (field d), and
-- now before its lease expiry (field e). An in-progress record outlives its lease by a slack (see
-- begin), so an expired lease is judged here, never by whether Redis has deleted the key yet: a
-- lease that ran out is lost whether or not it is still stored.
local function live_lease(key, token)
  local r = call('HMGET', key, 's', 'e', 'd')
  return r[1] == 'p' and r[3] == token and now < tonumber(r[2])
end

-- Each op returns its entry's three reply values.
local function begin(key, hash, token, leaseMs)
  local r = call('HMGET', key, 's', 'h', 'e', 'd')
  local takeover = 0
  if r[1] then
    local e = tonumber(r[3])
    if now < e then
      if r[2] ~= hash then return 'm', 0, 0 end
      if r[1] == 'c' then return 'c', r[4], 0 end
      return 'i', e - now, 0
    end
    if r[1] == 'p' then takeover = 1 end
  end
  local lease = tonumber(leaseMs)
  local expires = now + lease
  -- Every field is written (d replaces a dead record's value or token): no HDEL needed.
  call('HSET', key, 's', 'p', 'h', hash, 'e', expires, 'c', now, 'd', token)
  -- Kept one more lease after the lease (the slack): a caller that retries an `in-progress` after
  -- its retryAfterMs, as it is told to, finds the dead record and is told it took over (`takeover`,
  -- which renew, complete and release never depend on: they judge the lease by e). Past the slack
  -- a dead holder's record is gone, so an abandoned key holds memory for at most two leases.
  call('PEXPIRE', key, lease + lease)
  return 'a', expires, takeover
end

local function complete(key, token, value, ttlMs)
  if not live_lease(key, token) then return 0, 0, 0 end
  local ttl = tonumber(ttlMs)
  call('HSET', key, 's', 'c', 'e', now + ttl, 'd', value)
  -- No slack: a completed record past its ttl answers as absent, deleted or not.
  call('PEXPIRE', key, ttl)
  return 1, 0, 0
end

local function renew(key, token, leaseMs)
  if not live_lease(key, token) then return 0, 0, 0 end
  local lease = tonumber(leaseMs)
  call('HSET', key, 'e', now + lease)
  -- The same slack after the lease as at begin.
  call('PEXPIRE', key, lease + lease)
  return 1, 0, 0
end

local function release(key, token)
  if not live_lease(key, token) then return 0, 0, 0 end
  call('DEL', key)
  return 1, 0, 0
end

local OPS = { b = begin, c = complete, n = renew, r = release }

local out = { now }
local n = 1
for i = 1, #KEYS do
  local j = 4 * i
  local op = OPS[ARGV[j - 3]]
  -- pcall: a Redis error in one entry (a key of another type, OOM at its first write) fails that
  -- entry only, as it failed that call alone, and leaves the other callers' answers standing.
  local ok, a, b, c = pcall(op, KEYS[i], ARGV[j - 2], ARGV[j - 1], ARGV[j])
  if not ok then
    -- Redis 7 raises a redis.call error as a table { err = message }; a Lua error is a string.
    a, b, c = 'e', type(a) == 'table' and a.err or tostring(a), 0
  end
  out[n + 1], out[n + 2], out[n + 3] = a, b, c
  n = n + 3
end
return out
