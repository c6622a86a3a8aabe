--[[
  stream-dead: moves one entry to the dead-letter stream: XADD of the dead letter and XACK of the
  entry in one step, fenced like stream-ack.lua (only the consumer holding that delivery may).
  KEYS[1]  stream           KEYS[2] dead-letter stream    KEYS[3] attempts hash (one slot on Cluster)
  ARGV[1]  group            ARGV[2] consumer         ARGV[3] entry id       ARGV[4] token
  ARGV[5]  reason           ARGV[6] first error      ARGV[7] last error     ARGV[8] dead-letter MAXLEN ('' none)
  ARGV[9]  attempts (the handler runs counted, for the dead letter's field)
  ARGV[10..] field, value pairs of the entry as the consumer read it: the dead letter's copy when
           the entry is gone from the stream already (see lib/stream-dead-letter.lua)
  Returns  1 dead-lettered and acked, 0 fenced (nothing written)
]]

-- #include lib/stream-fence.lua

-- #include lib/stream-dead-letter.lua

local stream, dead, group, consumer, id, token = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if stream_fenced(stream, group, consumer, id, token) then return 0 end
local known = {}
for f = 10, #ARGV do known[#known + 1] = ARGV[f] end
stream_dead_letter(stream, dead, group, id, ARGV[5], ARGV[9], ARGV[6], ARGV[7], ARGV[8], known)
redis.call('XACK', stream, group, id)
redis.call('HDEL', KEYS[3], id)
return 1
