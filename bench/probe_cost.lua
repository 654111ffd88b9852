-- Host cost of one measured phase, in C and through Lua, against bare calls
-- and a two-clock baseline measured in the same run.
--   lua5.4 bench/probe_cost.lua        (make bench runs it)
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"

local p = io.popen("build/bench_probe_cost")
io.write(p:read("a"))
assert(p:close(), "build/bench_probe_cost failed (run make first)")

local N = 2000000
local function f() end

local function best(run)
  local b = math.huge
  for _ = 1, 5 do
    local t0 = pp.now()
    run()
    local per = (pp.now() - t0) / N
    if per < b then b = per end
  end
  return b
end

pp.sink("none")
pp.store.enable(false)
local phase, measure, clock = pp.phase, pp.measure, os.clock

local rows = {}
local function row(name, enabled, run)
  if enabled then pp.enable() else pp.disable() end
  pp.begin()
  rows[#rows + 1] = { name, best(run) }
  pp.enable()
  if pp.is_open() then pp.emit() end
end

row("bare Lua call f()", false, function() for _ = 1, N do f() end end)
row("bare Lua call f(), again (noise)", false, function() for _ = 1, N do f() end end)
local abs = math.abs
row("bare Lua-to-C call math.abs(1)", false, function() for _ = 1, N do abs(1) end end)
row("disabled pp.measure('prepare', f)", false, function() for _ = 1, N do measure("prepare", f) end end)
row("disabled <close> pp.phase scope + f()", false, function()
  for _ = 1, N do local _ <close> = phase("prepare"); f() end end)
row("enabled pp.measure('prepare', f)", true, function() for _ = 1, N do measure("prepare", f) end end)
row("enabled <close> pp.phase scope + f()", true, function()
  for _ = 1, N do local _ <close> = phase("prepare"); f() end end)
local lap, mark = pp.lap, pp.mark
row("enabled t = pp.lap('prepare', t) + f()", true, function()
  local t = mark()
  for _ = 1, N do f(); t = lap("prepare", t) end end)
row("baseline: os.clock() pair + f()", false, function()
  local acc = 0
  for _ = 1, N do local a = clock(); f(); acc = acc + (clock() - a) end end)

local bare = math.min(rows[1][2], rows[2][2])
print(string.format("%-44s %9s %12s", "Lua, per phase", "ns/iter", "x bare call"))
for _, r in ipairs(rows) do
  print(string.format("%-44s %9.2f %12.2f", r[1], r[2], r[2] / bare))
end
