-- Exact addition of canonical decimal integer strings (any length: amounts are not bounded by
-- 64 bits). Needs cmp (int-compare.lua) and int (int-text.lua).

local function reverse_digits(t)
  local n = #t
  while n > 1 and t[n] == 0 do t[n] = nil; n = n - 1 end
  local s = {}
  for i = n, 1, -1 do s[#s + 1] = string.char(48 + t[i]) end
  return table.concat(s)
end

local function add_mag(x, y)
  local out, carry, i, j = {}, 0, #x, #y
  while i > 0 or j > 0 or carry > 0 do
    local s = carry + (i > 0 and x:byte(i) - 48 or 0) + (j > 0 and y:byte(j) - 48 or 0)
    out[#out + 1] = s % 10
    carry = (s >= 10) and 1 or 0
    i, j = i - 1, j - 1
  end
  return reverse_digits(out)
end

-- x - y for magnitudes with x > y.
local function sub_mag(x, y)
  local out, borrow, i, j = {}, 0, #x, #y
  while i > 0 do
    local s = (x:byte(i) - 48) - borrow - (j > 0 and y:byte(j) - 48 or 0)
    if s < 0 then s = s + 10; borrow = 1 else borrow = 0 end
    out[#out + 1] = s
    i, j = i - 1, j - 1
  end
  return reverse_digits(out)
end

local function add(a, b)
  -- Fast path: with at most 13 characters each, |a|, |b| < 10^13, so the sum is exact in a double
  -- and below 10^14, which int() writes exactly. The operands are canonical decimal strings (no
  -- hex, no exponent, no '-0'), so coercion is exact.
  if #a <= 13 and #b <= 13 then return int(a + b) end
  local na, nb = a:sub(1, 1) == '-', b:sub(1, 1) == '-'
  local x, y = na and a:sub(2) or a, nb and b:sub(2) or b
  if na == nb then
    local r = add_mag(x, y)
    return na and ('-' .. r) or r
  end
  local c = cmp(x, y)
  if c == 0 then return '0' end
  if c > 0 then
    local r = sub_mag(x, y)
    return na and ('-' .. r) or r
  end
  local r = sub_mag(y, x)
  return nb and ('-' .. r) or r
end
