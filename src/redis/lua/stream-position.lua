--[[
  stream-position: a consumer group's position next to the stream's first entry, read at one
  instant (so no entry is added, delivered or trimmed between the readings that are compared).
  KEYS[1]  stream              the stream
  ARGV[1]  group               the consumer group
  ARGV[2]  pending cap         at most this many pending entries counted below the first entry
  Returns  { state, first, last_generated, entries_added, length,
             last_delivered, entries_read, pending, pending_trimmed }
           state             'ok' | 'no-stream' | 'no-group'
           first             the first entry's id ('' when the stream is empty)
           entries_read      '' when the server does not know it (a group set to an arbitrary id)
           pending_trimmed   pending entries of the group whose ids are before the first entry
                             (their content is gone), counted up to the cap
  Counts are returned as decimal strings ('%.0f': tostring() writes numbers past 1e14 in
  exponent form); Lua's doubles hold them exactly up to 2^53 entries.
]]

local function int(n) return string.format('%.0f', tonumber(n)) end

local stream = KEYS[1]
if redis.call('EXISTS', stream) == 0 then return { 'no-stream' } end

local s = redis.call('XINFO', 'STREAM', stream)
local info = {}
for i = 1, #s, 2 do info[s[i]] = s[i + 1] end

local group
for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
  local gi = {}
  for i = 1, #g, 2 do gi[g[i]] = g[i + 1] end
  if gi['name'] == ARGV[1] then group = gi end
end
if not group then return { 'no-group' } end

local first = ''
if info['first-entry'] then first = info['first-entry'][1] end
local pending_trimmed = 0
if tonumber(group['pending']) > 0 then
  if first == '' then
    pending_trimmed = math.min(tonumber(group['pending']), tonumber(ARGV[2]))
  else
    pending_trimmed = #redis.call('XPENDING', stream, ARGV[1], '-', '(' .. first, tonumber(ARGV[2]))
  end
end
local entries_read = ''
if group['entries-read'] then entries_read = int(group['entries-read']) end
return {
  'ok', first, info['last-generated-id'], int(info['entries-added']), int(info['length']),
  group['last-delivered-id'], entries_read, int(group['pending']), int(pending_trimmed),
}
