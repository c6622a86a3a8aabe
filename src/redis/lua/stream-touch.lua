--[[
  stream-touch: for entries a consumer holds, whether each is still its delivery (fenced as
  stream-ack.lua checks it), and for those it asks, the idle time reset (XCLAIM ... JUSTID: the
  delivery count, its fencing token, stays), so that entries waiting their key's turn, or running a
  long handler, are not reclaimed from a live consumer. An entry trimmed from the stream is not
  reset: XCLAIM would drop it from the pending list without a word (Redis 7), and the consumer
  still holds its fields (it runs or is dead-lettered from them, acked while still pending).
  KEYS[1]   stream
  ARGV[1]   group           ARGV[2] consumer
  ARGV[3..] id, token, reset ('1' reset its idle time, '0' only check) triples
  Returns   one integer per entry, in order: 1 still this consumer's delivery, 0 not
]]

-- #include lib/stream-fence.lua

local stream, group, consumer = KEYS[1], ARGV[1], ARGV[2]
local out, reset = {}, { 'XCLAIM', stream, group, consumer, 0 }
for i = 3, #ARGV, 3 do
  if stream_fenced(stream, group, consumer, ARGV[i], ARGV[i + 1]) then
    out[#out + 1] = 0
  else
    out[#out + 1] = 1
    if ARGV[i + 2] == '1' and #redis.call('XRANGE', stream, ARGV[i], ARGV[i]) > 0 then
      reset[#reset + 1] = ARGV[i]
    end
  end
end
if #reset > 5 then
  reset[#reset + 1] = 'JUSTID'
  redis.call(unpack(reset))
end
return out
