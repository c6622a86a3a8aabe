--[[
  ledger-apply: for each entry, admit its signature into the owner's window and apply its deltas,
  atomically; several entries (a batch of concurrent calls) run in one script, in order, exactly as
  if applied one after the other. Both keys of one entry share the owner's {hash tag}; on Redis
  Cluster a batch holds entries of one slot, or of one master in the node variant (lib/node-batch.lua).

  Entry i (1-based) uses KEYS[2i-1 .. 2i]:
  KEYS[2i-1]  state     hash    s: the owner's balances and window, in one string (format below)
                                r: the last call of each of its recent runs (format below)
                                m: the journal trail, for ledger-resolve.lua, kept when the
                                   limit drops entries (lib/journal-trail.lua; entries' field p)
                                t:<#scope>:<scope><field>: this owner's total booked under scope
  KEYS[2i]    journal   stream  one entry per applied signature
  ARGV[1]     entries   one flat JSON array; per entry, in order: call (this run's counter, increasing
                        per call, a decimal string), signature, capacity, order ('' when
                        none), horizon (1 answer stale at or below it, 0 do not track it), scope ('' when
                        none), meta JSON ('' when none), n (number of deltas), then n field, delta
                        pairs; every amount and order a string
  ARGV[2]     journal limit     '' keep every entry, '0' keep none, n keep the newest n
  ARGV[3]     run       this store's run id (base64url: no space, no 0xFE or 0xFF)
  Returns     a JSON array, one reply per entry: [outcome, seq, { field: balance, ... }], with a
              fourth element 1 when the owner had no state before it (a first apply, or state
              Redis lost: the client then registers the owner again)
              outcome: 'applied' | 'duplicate' | 'stale'; seq is '' unless applied

  The field r is `\254<run> <call> <outcome letter><seq>\254...`: the last call of each of the
  RUNS runs (stores) that wrote the owner most recently, newest first. A script whose reply was
  lost (a killed connection) is sent again by the client once it reconnects, however long that
  takes: meanwhile other processes may have pushed its signature out of the window, and the window
  alone would apply it twice. The call number settles it: a call at or below its run's last one
  already ran, and is answered as it was (outcome and seq), changing nothing. One run's calls of
  one owner run in call order (the client waits for a batch in flight that holds the owner), so
  the last call per run is enough. A field of its own, not a part of s: a process still running
  an earlier version during a rolling deploy rewrites s as it reads it, and leaves r alone.

  The field s is `<balances>\255<seq>,<count>,<horizon>,<order 1>,...,<order count>,` followed by
  `\255<signature 1>\255...\255<signature count>\255`, oldest first: balances is a JSON object
  (field -> canonical decimal string), seq the journal counter, horizon the highest evicted order
  ('' when none), an order '' when the entry had none. The byte 0xFF never occurs in UTF-8, and
  field names and signatures are well-formed strings (the ledger refuses lone surrogates), so the
  first two 0xFF split the parts and `\255<signature>\255` occurs in the window exactly when the
  signature is in it: the duplicate check is one plain string search, with nothing decoded, and
  linear in the window's bytes (see in_window).

  Costs (scripts/redis-ledger-lua-parts.mjs measures each part, node bench/run.mjs redis-ledger the whole): per entry, a script pays mostly for its
  redis.call()s and for turning values into Lua strings and back. So the batch travels as one JSON
  argument and returns as one JSON string (the client encodes and parses one string instead of
  ~1 000), one HGET (an HMGET with the scope totals of the deltas) reads what an entry needs
  and one HSET writes it. Amounts are added as decimal strings: HINCRBY stops at 64 bits and could
  fail half-way through the deltas (a script is not rolled back), so it must not be used here.
]]

-- #include lib/int-compare.lua

-- #include lib/int-text.lua

-- #include lib/decimal-add.lua

-- Library functions as locals: a global and a field lookup fewer per call, in the hot path.
local find, sub, match, byte = string.find, string.sub, string.match, string.byte

-- #include lib/journal-trail.lua

local args = cjson.decode(ARGV[1])
local limit = ARGV[2]
local run = ARGV[3]

-- #include lib/ledger-book.lua

local replies = {}
local a = 1
for k = 1, #KEYS, 2 do
  local reply
  reply, a = book(KEYS[k], KEYS[k + 1], a)
  replies[#replies + 1] = reply
end
return '[' .. table.concat(replies, ',') .. ']'
