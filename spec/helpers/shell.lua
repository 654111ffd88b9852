-- shell.lua: commands the specs start, with their output and exit status.
local M = {}

-- s quoted for the shell.
function M.q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- The command line that runs a child Lua interpreter: PHASEPROBE_LUA when
-- set (make tsan: build/lua_host; make valgrind: valgrind running lua5.4,
-- so that the children's memory is checked too), else lua5.4.
M.lua = os.getenv("PHASEPROBE_LUA") or "lua5.4"

-- Runs a C check program (spec/helpers/*.c): asserts that no line of its
-- output says FAIL, that it printed "ok CASE" for each case of the list,
-- and that it exited 0. Returns its output.
function M.checks_pass(cmd, cases)
  local luassert = require "luassert"
  local ok, out = M.run(cmd)
  luassert.is_nil(out:find("FAIL", 1, true), out)
  for _, case in ipairs(cases) do
    luassert.truthy(out:find("ok " .. case .. "\n", 1, true), case .. "\n" .. out)
  end
  luassert.is_true(ok, out)
  return out
end

-- Runs a check program that prints one summary line: asserts that its
-- output matches pattern and that it exited 0. Returns its output.
function M.prints(cmd, pattern)
  local luassert = require "luassert"
  local ok, out = M.run(cmd)
  luassert.truthy(out:find(pattern), out)
  luassert.is_true(ok, out)
  return out
end

-- Runs cmd (a shell command line): whether it exited 0, its standard output
-- and error together, and its exit code.
function M.run(cmd)
  local p = assert(io.popen("(" .. cmd .. ") 2>&1"))
  local out = p:read("a")
  local ok, _, code = p:close()
  return ok == true, out, code
end

-- The exit code and the output of cmd.
function M.status(cmd)
  local _, out, code = M.run(cmd)
  return code, out
end

-- The lines cmd prints, sorted; cmd must succeed.
function M.lines(cmd)
  local ok, out = M.run(cmd)
  assert(ok, out)
  local t = {}
  for l in out:gmatch("[^\n]+") do t[#t + 1] = l end
  table.sort(t)
  return t
end

-- The paths a shell pattern names, sorted ("csrc/lua/*.c").
function M.ls(pattern) return M.lines("ls " .. pattern) end

return M
