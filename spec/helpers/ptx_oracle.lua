-- ptx_oracle.lua: slow, independent answers for well-formed PTX (nvcc's and
-- the fixtures'), to hold the C scanner's figures against. Line-and-pattern
-- based: no string literals containing comment starters, bodies close with
-- a '}' alone at the start of a line. Also what the PTX specs share: where
-- their PTX lives, the barrier marker, a scan's lists by name.
local M = {}

-- Where the PTX the specs scan lives, and the reference's barrier marker.
M.KERNELS = "examples/kernels/"
M.FIXTURES = "spec/fixtures/ptx/"
M.MARKER = "grid.sync barrier #"

M.read = require("helpers.files").slurp

function M.strip_comments(s)
  s = s:gsub("/%*.-%*/", function(c) return (c:gsub("[^\n]", " ")) end)
  s = s:gsub("//[^\n]*", "")
  return s
end

-- The bodies of .entry definitions, by name, comments stripped.
function M.bodies(text)
  local s = M.strip_comments(text)
  local out, order = {}, {}
  for name, rest in s:gmatch("%.entry%s+([%w_$]+)(.-\n}\n)") do
    local body = rest:match("%b{}")
    out[name] = body
    order[#order + 1] = name
  end
  return out, order
end

-- Statements that are instructions: pieces between ';' (labels and braces
-- removed) whose first character is not '.'.
function M.instructions(body)
  body = body:gsub("%b\"\"", "")
  body = body:gsub("[%w_$]+:", "")
  body = body:gsub("[{}]", " ")
  local n = 0
  for piece in body:gmatch("([^;]*);") do
    local first = piece:match("^%s*(%S)")
    if first and first ~= "." then
      n = n + 1
    end
  end
  return n
end

-- Registers by class from ".reg .T %x<N>;" and ".reg .T name;" lines.
function M.registers(body)
  local out = {}
  for ty, rest in body:gmatch("%.reg%s+(%.[%w]+)%s+([^;]*);") do
    local n = 0
    for item in rest:gmatch("[^,]+") do
      n = n + (tonumber(item:match("<(%d+)>")) or 1)
    end
    out[ty] = (out[ty] or 0) + n
  end
  return out
end

-- Occurrences of an opcode prefix at the start of a statement.
function M.count_ops(body, pattern)
  local n = 0
  for line in body:gmatch("[^\n]+") do
    local op = line:match("^%s*@!?%%?[%w_]+%s+([%a][%w%.]*)") or line:match("^%s*([%a][%w%.]*)")
    if op and op:match(pattern) then
      n = n + 1
    end
  end
  return n
end

function M.lines(s)
  local n = select(2, s:gsub("\n", ""))
  if #s > 0 and s:sub(-1) ~= "\n" then n = n + 1 end
  return n
end

-- 1-based line and byte column of byte offset i (1-based) in s.
function M.position(s, i)
  local before = s:sub(1, i - 1)
  local line = select(2, before:gsub("\n", "")) + 1
  local last_nl = before:match(".*()\n")
  return line, last_nl and (i - last_nl) or i
end

-- A list of a scan's result (entries, functions, globals) by name.
function M.by_name(list)
  local out = {}
  for _, e in ipairs(list) do out[e.name] = e end
  return out
end

return M
