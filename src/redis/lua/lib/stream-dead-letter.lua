-- Writes a dead letter for entry `id` of `stream` to `dead` in the shared format (docs/streams.md):
-- reason, attempts, first_error, last_error, origin `<stream>/<group>/<id>`, event (the entry's
-- field e, '' when the entry is gone), id (its field i, when it has one), at (Redis TIME, ms).
-- `maxlen` ('' for none) caps the dead-letter stream (XADD MAXLEN ~).
local function stream_dead_letter(stream, dead, group, id, reason, attempts, first_error, last_error, maxlen)
  local event, event_id = '', nil
  local entry = redis.call('XRANGE', stream, id, id)[1]
  if entry then
    local fields = entry[2]
    for f = 1, #fields, 2 do
      if fields[f] == 'e' then event = fields[f + 1] elseif fields[f] == 'i' then event_id = fields[f + 1] end
    end
  end
  local now = redis.call('TIME')
  local at = tostring(tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
  local xadd = { 'XADD', dead }
  if maxlen ~= '' then
    xadd[#xadd + 1] = 'MAXLEN'; xadd[#xadd + 1] = '~'; xadd[#xadd + 1] = maxlen
  end
  for _, v in ipairs({ '*', 'reason', reason, 'attempts', attempts, 'first_error', first_error,
    'last_error', last_error, 'origin', stream .. '/' .. group .. '/' .. id, 'event', event }) do
    xadd[#xadd + 1] = v
  end
  if event_id then xadd[#xadd + 1] = 'id'; xadd[#xadd + 1] = event_id end
  xadd[#xadd + 1] = 'at'; xadd[#xadd + 1] = at
  redis.call(unpack(xadd))
end
