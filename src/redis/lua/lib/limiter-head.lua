-- Library functions as locals: a global and a field lookup fewer per call, in the hot paths.
local find, sub, match, fmod, max = string.find, string.sub, string.match, math.fmod, math.max
local function floordiv(a, b)
  local r = fmod(a, b)
  local q = (a - r) / b
  if r < 0 then q = q - 1 end
  return q
end

local function ceildiv(a, b)
  local r = fmod(a, b)
  local q = (a - r) / b
  if r > 0 then q = q + 1 end
  return q
end

-- Every number written into a value goes through int() (lib/int-text.lua): Lua's own
-- number-to-string ('%.14g') is exact only below 1e14, and a client clock or a cost may pass it
-- (limit x window is allowed up to 2^53).
-- #include lib/int-text.lua

-- '<a>:<b>' into two numbers (a plain find is cheaper than a pattern with captures).
local function pair(v)
  local i = find(v, ':', 1, true)
  return tonumber(sub(v, 1, i - 1)), tonumber(sub(v, i + 1))
end
