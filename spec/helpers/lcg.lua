-- lcg.lua: a small deterministic random source for the specs (and the
-- benchmarks that borrow spec helpers): a linear congruential generator,
-- so a seed gives the same numbers on every machine and Lua build.
--
--   local rand = require("helpers.lcg").new(seed)
--   rand(n)   -- an integer in 0 .. n-1
local M = {}

function M.new(seed)
  local s = seed
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return s % n
  end
end

return M
