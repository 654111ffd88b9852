-- cuda_sub.lua: runs a Lua chunk in a fresh interpreter, so each run loads
-- the CUDA driver (or the fake one) anew with its own environment. The
-- driver is loaded once per process, so per-case environments need this.
--
--   local sub = require "helpers.cuda_sub"
--   local r = sub.run({ PHASEPROBE_LIBCUDA = sub.fake }, [[
--     report("avail", cu.available())
--     try("oom", function() ctx:alloc(1 << 40) end)
--   ]])
--   r.avail, r.oom, r._output, r._status
--
-- Inside the chunk: pp (the module), cu (pp.cuda), report(key, ...) writes
-- one "key<TAB>value" line (values joined by " | "), try(key, fn, ...)
-- reports "ok" or "error: <message>".
local M = {}

M.fake = "build/libfakecuda.so"

-- The interpreter running the specs, unless PHASEPROBE_LUA names the
-- children's (a command line: make valgrind runs them under valgrind).
local function interpreter()
  local i = 0
  while arg and arg[i - 1] do
    i = i - 1
  end
  return (arg and i < 0 and arg[i]) or "lua5.4"
end

local prelude = [[
package.cpath = "./?.so;" .. package.cpath
package.path = "./lua/?.lua;./lua/?/init.lua;./spec/?.lua;" .. package.path
pp = require "phaseprobe"
cu = pp.cuda
function report(key, ...)
  local parts = {}
  for i = 1, select("#", ...) do
    parts[#parts + 1] = tostring((select(i, ...)))
  end
  local v = table.concat(parts, " | "):gsub("\n", "\\n")
  io.write(key, "\t", v, "\n")
  io.flush()
end
function try(key, fn, ...)
  local ok, err = pcall(fn, ...)
  report(key, ok and "ok" or ("error: " .. tostring(err)))
  return ok
end
]]

local function quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Runs chunk with env (a table of variables; false unsets one). Returns a
-- table of reported keys, plus _output (all output) and _status (exit ok).
function M.run(env, chunk)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(prelude, "\n", chunk, "\n")
  f:close()
  local unset, set = {}, {}
  for k, v in pairs(env or {}) do
    if v == false then
      unset[#unset + 1] = "-u " .. k
    else
      set[#set + 1] = k .. "=" .. quote(v)
    end
  end
  table.sort(unset)
  table.sort(set)
  local vars = { "env", table.concat(unset, " "), table.concat(set, " ") }
  local cmd = table.concat(vars, " ") .. " " .. (os.getenv("PHASEPROBE_LUA") or quote(interpreter())) .. " "
    .. quote(path) .. " 2>&1"
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local ok = p:close()
  os.remove(path)
  local r = { _output = out, _status = ok }
  for line in out:gmatch("[^\n]+") do
    local k, v = line:match("^([%w_%.]+)\t(.*)$")
    if k then
      r[k] = v
    end
  end
  return r
end

-- Whether the module was built with the CUDA layer and the fake exists.
function M.fake_ready()
  local pp = require "phaseprobe"
  local f = io.open(M.fake, "rb")
  if f then
    f:close()
  end
  return pp.cuda.built_with_cuda and f ~= nil
end

return M
