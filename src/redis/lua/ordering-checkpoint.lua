--[[
  ordering-checkpoint: save a reorder buffer's checkpoint unless a newer one is stored, so a
  delayed save (or a consumer that lost its lease and still runs) cannot move a stream back.
  KEYS[1]  {ord:name} checkpoint   hash   r: revision (integer)   d: the snapshot (JSON)
  ARGV[1]  revision                a safe integer (|r| < 2^53), increasing per save
  ARGV[2]  snapshot                JSON text
  Returns  { outcome, revision }   outcome 'saved' | 'stale'; revision is the stored one after
  The same save twice (revision and snapshot equal: a client re-sending a command whose reply was
  lost in a reconnect, as ioredis does by default) answers 'saved' again; only another run's save
  of that revision or a later one makes this one stale.
]]

-- Raw strings are returned, never tostring(number): Lua 5.1 prints 2^53 as '9.007199254741e+15'.
-- No stored checkpoint: any revision is saved, a negative one too (as the memory model does).
local raw = redis.call('HGET', KEYS[1], 'r')
if raw then
  local incoming, stored = tonumber(ARGV[1]), tonumber(raw)
  if incoming < stored then return { 'stale', raw } end
  if incoming == stored then
    if redis.call('HGET', KEYS[1], 'd') == ARGV[2] then return { 'saved', raw } end
    return { 'stale', raw }
  end
end
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'd', ARGV[2])
return { 'saved', ARGV[1] }
