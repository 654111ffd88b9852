-- isolated.lua: a Lua chunk run in a fresh interpreter, with a time limit,
-- so that a crash (or a sanitizer's report) fails the one case instead of
-- the whole run; under `make asan` that interpreter is sanitized too
-- (LD_PRELOAD is inherited). Shared by spec/safety_spec.lua and
-- spec/safety_records_spec.lua.
--
--   local isolated = require "helpers.isolated"
--   local r = isolated.clean(isolated.run([[ try("n", pp.parse.string, "p a=1\n") ]]))
--   r.n, r._out, r._ok
--
-- Inside the chunk: pp (the module); report(k, ...) writes one
-- "k<TAB>value" line (values joined by " | "); try(k, f, ...) reports "ok"
-- and what f returned, or "error: <message>"; endless() makes a FIFO fed
-- with PTX-like text without end.
local files = require "helpers.files"
local shell = require "helpers.shell"

local q = shell.q
-- the child interpreter: under `make valgrind`, valgrind running lua5.4
local LUA = shell.lua

local M = {}

-- What every chunk starts with (a spec that starts its own interpreter
-- puts it first too).
M.PRELUDE = [[
package.cpath = "./?.so;" .. package.cpath
package.path = "./lua/?.lua;./spec/?.lua;" .. package.path
pp = require "phaseprobe"
function report(k, ...)
  local t = {}
  for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
  io.write(k, "\t", (table.concat(t, " | "):gsub("\n", "\\n")), "\n")
  io.flush()
end
-- A FIFO fed with PTX-like text without end (by `yes`, which ends when the
-- reader closes it): an input whose size no one knows.
function endless()
  local path = os.tmpname()
  os.remove(path)
  assert(os.execute("mkfifo " .. path))
  os.execute("(yes '.reg .b32 r;' > " .. path .. " 2>/dev/null &)")
  return path
end
function try(k, f, ...)
  local r = table.pack(pcall(f, ...))
  if r[1] then report(k, "ok", table.unpack(r, 2, r.n))
  else report(k, "error: " .. tostring(r[2])) end
end
]]

-- Runs chunk after the prelude (opts: env, a table of variables; timeout,
-- in seconds, 60 unless given; stdin, a path); returns the lines it
-- reported as key<TAB>value, with its whole output (_out) and whether it
-- exited cleanly (_ok).
function M.run(chunk, opts)
  opts = opts or {}
  local path = os.tmpname()
  files.spit(path, M.PRELUDE .. chunk)
  local env = ""
  for k, v in pairs(opts.env or {}) do env = env .. k .. "=" .. q(v) .. " " end
  local cmd = ("%s timeout %d %s %s %s 2>&1"):format(env, opts.timeout or 60, LUA, q(path),
    opts.stdin and ("< " .. q(opts.stdin)) or "")
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  local ok = p:close()
  os.remove(path)
  local r = { _out = out, _ok = ok }
  for k, v in out:gmatch("([%w_]+)\t([^\n]*)") do r[k] = v end
  return r
end

-- r, asserted to come from an interpreter that exited cleanly with no
-- sanitizer report.
function M.clean(r)
  assert(r._ok, "the interpreter did not exit cleanly:\n" .. r._out)
  assert(not r._out:find("AddressSanitizer", 1, true), r._out)
  assert(not r._out:find("runtime error", 1, true), r._out)
  return r
end

return M
