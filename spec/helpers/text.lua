-- text.lua: what the specs count and look for in text.
local luassert = require "luassert"

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

-- Asserts that s matches each Lua pattern of the list, in turn: a failure
-- shows the pattern that did not match (assert.matches names it).
function M.matches_all(s, patterns)
  for _, p in ipairs(patterns) do luassert.matches(p, s) end
end

-- Asserts that s holds each plain string of the list (no patterns); a
-- failure names the one missing.
function M.has_all(s, plains)
  for _, p in ipairs(plains) do luassert.truthy(s:find(p, 1, true), "missing: " .. p) end
end

-- Asserts that s holds none of the plain strings of the list; a failure
-- names the one found.
function M.has_none(s, plains)
  for _, p in ipairs(plains) do luassert.is_nil(s:find(p, 1, true), "found: " .. p) end
end

return M
