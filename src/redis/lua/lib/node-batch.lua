-- node-batch: the prelude of a batched script's node variant (scripts/gen-lua.mjs emits one per
-- batched script: ledger-apply-node, limiter-take-node, idempotency-batch-node). On Redis Cluster a
-- turn's calls of many hash slots owned by one master then share one script call, where declared
-- KEYS must all hash to one slot (CROSSSLOT otherwise, shebang or not). The shebang's
-- allow-cross-slot-keys lets the script touch keys it did not declare, as long as each is local to
-- the node; a key that is not fails its command, and Redis does not roll a script back. So every
-- key is read first (EXISTS under pcall), before any write: one that is not local (another node's
-- slot, a missing key of a slot migrating away, a key of a slot being imported) ends the script
-- with the error ONCEFLOW-NONLOCAL, nothing written, and the client runs the batch as one script
-- per slot instead (declared keys, which the client routes and redirects). The client sends node
-- variants on the master's own connection, never after ASKING: with ASKING a key of a slot being
-- imported would pass for local while it still lives on the old master.
--
-- KEYS[1]   one key of the batch (the first entry's): the slot the client routes by
-- ARGV[1]   n, the number of keys of the batch; ARGV[2] g, how many consecutive keys share a slot
--           (an entry's keys: 2 for ledger-apply, else 1); ARGV[3 .. n + 2] the keys, as the body's
--           KEYS (with the client's keyPrefix); ARGV[n + 3 ..] the body's ARGV
-- The body that follows sees these KEYS and ARGV, as the per-slot script sees its own.
local KEYS, ARGV, g = (function(argv)
  local n = tonumber(argv[1])
  local keys, rest = {}, {}
  for i = 1, n do keys[i] = argv[i + 2] end
  for i = n + 3, #argv do rest[#rest + 1] = argv[i] end
  return keys, rest, tonumber(argv[2])
end)(ARGV)
-- One EXISTS per entry: keys of one slot in one command, which a slot half moved refuses
-- (TRYAGAIN) as it refuses a key gone (ASK).
for i = 1, #KEYS, g do
  local r = redis.pcall('EXISTS', unpack(KEYS, i, i + g - 1))
  if type(r) == 'table' then
    return redis.error_reply('ONCEFLOW-NONLOCAL ' .. KEYS[i] .. ': ' .. tostring(r.err) .. ' (nothing written)')
  end
end
