--[[
  stream-dead-letter: append one dead-letter entry (onceflow/streams' shared format) stamped with
  the server's clock, in one step: the entry's `at` is Redis TIME, the same clock as every entry id
  and dedup window of the stream, whichever process writes it.

  KEYS[1]  the dead-letter stream (default `<stream>:dead`)
  ARGV[1..] field, value pairs of the entry (reason, attempts, first_error, last_error, origin,
            event, and id when the event has one), built by dead-letter.ts deadLetterFields
  Returns  the dead-letter entry's id
]]

local t = redis.call('TIME')
local at = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
return redis.call('XADD', KEYS[1], '*', 'at', at, unpack(ARGV))
