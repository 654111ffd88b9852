-- text.lua: what the specs count in text.
local M = {}

-- How many times `plain` (no pattern) occurs in s, without overlaps.
function M.count(s, plain)
  local n, pos = 0, 1
  while true do
    local a, b = s:find(plain, pos, true)
    if not a then return n end
    n, pos = n + 1, b + 1
  end
end

return M
