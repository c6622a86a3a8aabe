-- Compares two canonical integer strings (no '+', no leading zeros, no '-0'): -1, 0 or 1.
-- Strings, not numbers: Lua numbers are doubles, and orders or versions above 2^53 (snowflake
-- ids, LSNs) would compare wrongly once converted.
local function cmp(a, b)
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  if na ~= nb then return na and -1 or 1 end
  local x, y = na and a:sub(2) or a, nb and b:sub(2) or b
  local r = 0
  if #x ~= #y then r = (#x < #y) and -1 or 1
  elseif x ~= y then r = (x < y) and -1 or 1 end
  return na and -r or r
end
