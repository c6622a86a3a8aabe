--[[
  ledger-read: one owner's balances and window, as ledger-apply.lua keeps them in field `s`.
  KEYS[1]  state   hash   (see ledger-apply.lua for the format of `s`)
  ARGV[*]  none
  Returns  { balances JSON, horizon ('' when none), signature 1, ..., signature n }, oldest first;
           {} when the owner has no state. Split here, not in the client: the field holds 0xFF
           bytes, which a client decoding replies as UTF-8 would turn into U+FFFD (which a field
           name or a signature may hold for real).
]]

local s = redis.call('HGET', KEYS[1], 's')
if not s then return {} end
local p = s:find('\255', 1, true)
local q = s:find('\255', p + 1, true)
local out = { s:sub(1, p - 1), s:sub(p + 1, q - 1):match('^%d+,%d+,(-?%d*),') }
for signature in s:sub(q + 1):gmatch('([^\255]+)\255') do out[#out + 1] = signature end
return out
