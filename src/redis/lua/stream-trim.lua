--[[
  stream-trim: trims a stream by age (XTRIM MINID), never past what a consumer group still needs,
  atomically: the groups' positions are read and the trim is made in one script, so no entry can
  be delivered (or a group move) between the reading and the trimming.
  KEYS[1]  stream              the stream
  ARGV[1]  max age             ms: entries older than the server's TIME minus this may go
  ARGV[2]  mode                'floor': the script finds the floor itself (Redis 7.0 and later);
                               'acked': XTRIM ... ACKED, the server keeps what a group still needs
                               (Redis 8.2 and later; the caller detected it)
  ARGV[3]  approximate         '1': MINID ~ (whole macro nodes only, cheaper; trims less, never more)
  ARGV[4]  limit               with approximate: at most this many entries evicted ('0': no limit)
  ARGV[5..] expected groups    groups that must exist: while one is missing nothing is trimmed (its
                               consumer has not created it yet, and will want the entries)
  Returns  { trimmed, minid, bound, group }
           trimmed  entries XTRIM removed (0 when it did not run)
           minid    the MINID given to XTRIM ('' when it did not run)
           bound    'age' (the cutoff by age), 'pending' (a group's oldest pending entry),
                    'undelivered' (a group's last-delivered-id: later entries are not yet read),
                    'acked' (ACKED mode: the server's own rule), 'missing-group', 'no-stream', 'young'
           group    the group whose position was the bound ('' otherwise)

  The floor of a group is its oldest pending entry when it has any (that entry is delivered and not
  acknowledged; everything before it is acknowledged), else the id right after its
  last-delivered-id (MINID keeps ids >= the floor: the entries it has not been delivered yet).
  Ids are compared and incremented part by part as decimal strings (both parts are unsigned
  64-bit, past what Lua's doubles hold exactly).
]]

-- #include lib/int-compare.lua

local function id_cmp(a, b)
  local ams, aseq = a:match('^(%d+)-(%d+)$')
  local bms, bseq = b:match('^(%d+)-(%d+)$')
  local c = cmp(ams, bms)
  if c ~= 0 then return c end
  return cmp(aseq, bseq)
end

-- A canonical decimal string plus one.
local function inc(d)
  local i = #d
  while i > 0 and d:sub(i, i) == '9' do i = i - 1 end
  if i == 0 then return '1' .. string.rep('0', #d) end
  return d:sub(1, i - 1) .. string.char(d:byte(i) + 1) .. string.rep('0', #d - i)
end

local U64_MAX = '18446744073709551615'

-- The smallest id after `id`; `id` itself after the last id there can be (nothing follows it).
local function next_id(id)
  local ms, seq = id:match('^(%d+)-(%d+)$')
  if seq ~= U64_MAX then return ms .. '-' .. inc(seq) end
  if ms ~= U64_MAX then return inc(ms) .. '-0' end
  return id
end

local stream = KEYS[1]
if redis.call('EXISTS', stream) == 0 then return { 0, '', 'no-stream', '' } end

local groups = {}
if ARGV[2] == 'floor' or #ARGV >= 5 then
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local info = {}
    for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
    groups[#groups + 1] = info
  end
end
for i = 5, #ARGV do
  local found = false
  for _, info in ipairs(groups) do
    if info['name'] == ARGV[i] then found = true end
  end
  if not found then return { 0, '', 'missing-group', ARGV[i] } end
end

local now = redis.call('TIME')
-- Whole ms of the server's clock, the clock XADD stamps ids with; '%.0f' because tostring()
-- writes numbers this large in exponent form.
local cutoff_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - tonumber(ARGV[1])
if cutoff_ms <= 0 then return { 0, '', 'young', '' } end
local minid = string.format('%.0f', cutoff_ms) .. '-0'
local bound, holder = 'age', ''

if ARGV[2] == 'floor' then
  for _, info in ipairs(groups) do
    local floor, why = next_id(info['last-delivered-id']), 'undelivered'
    if tonumber(info['pending']) > 0 then
      floor, why = redis.call('XPENDING', stream, info['name'])[2], 'pending'
    end
    if id_cmp(floor, minid) < 0 then minid, bound, holder = floor, why, info['name'] end
  end
else
  bound = 'acked'
end

local args = { 'XTRIM', stream, 'MINID', ARGV[3] == '1' and '~' or '=', minid }
if ARGV[3] == '1' and ARGV[4] ~= '0' then
  args[#args + 1] = 'LIMIT'
  args[#args + 1] = ARGV[4]
end
if ARGV[2] == 'acked' then args[#args + 1] = 'ACKED' end
return { redis.call(unpack(args)), minid, bound, holder }
