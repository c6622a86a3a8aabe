-- Writes a dead letter for entry `id` of `stream` to `dead` in the shared format (docs/streams.md):
-- reason, attempts, first_error, last_error, origin `<stream>/<group>/<id>`, event (the entry's
-- field e, absent when it has none), id (its field i, when it has one), every other field of the
-- entry as `field:<name>`, and at (Redis TIME, ms): once the entry is trimmed, its dead letter is
-- the only copy of what it held, a foreign entry's fields included. The fields are read from the
-- stream; when the entry is gone from it already, from `known` (the flat field, value list the
-- consumer read; empty when it has none). `maxlen` ('' for none) caps the dead-letter stream.
local function stream_dead_letter(stream, dead, group, id, reason, attempts, first_error, last_error, maxlen, known)
  local entry = redis.call('XRANGE', stream, id, id)[1]
  local fields = entry and entry[2] or known
  local event, event_id, others = nil, nil, {}
  for f = 1, #fields, 2 do
    local name, value = fields[f], fields[f + 1]
    if name == 'e' then event = value
    elseif name == 'i' then event_id = value
    else others[#others + 1] = 'field:' .. name; others[#others + 1] = value end
  end
  local now = redis.call('TIME')
  local at = tostring(tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
  local xadd = { 'XADD', dead }
  if maxlen ~= '' then
    xadd[#xadd + 1] = 'MAXLEN'; xadd[#xadd + 1] = '~'; xadd[#xadd + 1] = maxlen
  end
  for _, v in ipairs({ '*', 'reason', reason, 'attempts', attempts, 'first_error', first_error,
    'last_error', last_error, 'origin', stream .. '/' .. group .. '/' .. id }) do
    xadd[#xadd + 1] = v
  end
  if event then xadd[#xadd + 1] = 'event'; xadd[#xadd + 1] = event end
  if event_id then xadd[#xadd + 1] = 'id'; xadd[#xadd + 1] = event_id end
  for _, v in ipairs(others) do xadd[#xadd + 1] = v end
  xadd[#xadd + 1] = 'at'; xadd[#xadd + 1] = at
  redis.call(unpack(xadd))
end
