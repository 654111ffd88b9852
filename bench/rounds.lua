--- bench/rounds.lua: what the Lua benchmarks in bench/ share. Variants run
-- in alternating rounds (round r starts at variant r mod n, so no variant
-- always runs first or right after another); each round is timed as a whole
-- with pp.now() (the probe clock, in ns); a variant's figures are the
-- min/median/max of its rounds. clock_note names the probe clock and warns
-- when it is not the TSC.
local M = {}

-- This folder (bench/) and the checkout it is in.
M.here = (debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$")) or "."
M.root = M.here .. "/.."

--- Puts the checkout on the Lua paths (its lua/, the specs' helpers in
-- spec/, bench/ and its phaseprobe.so) and returns the module. A benchmark
-- starts with
--   local rounds = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/rounds.lua")
--   local pp = rounds.start()
function M.start()
  local r = M.root
  package.path = r .. "/lua/?.lua;" .. r .. "/lua/?/init.lua;" .. r .. "/spec/?.lua;"
    .. M.here .. "/?.lua;" .. package.path
  package.cpath = r .. "/?.so;" .. package.cpath
  return require "phaseprobe"
end

-- The median of a list, from the C summary (the one statistics code).
local function median(t)
  return require("phaseprobe").numeric.summary(t).median
end
M.median = median

--- The lines that say which clock the probe uses (and a warning when it is
-- not the TSC), for the head of a benchmark's output.
function M.clock_note(pp)
  local c = pp.clock()
  local out = { ("probe clock: %s, %.1f ns a read (%s); timed with pp.now()")
    :format(c.name, c.read_ns[c.name] or 0, c.reason) }
  if c.name ~= "tsc" then
    out[#out + 1] = "WARNING: the probe clock is not the TSC on this machine: every probe "
      .. "clock read is a clock_gettime call, and figures that include clock reads are "
      .. "not comparable with a TSC machine's"
  end
  return table.concat(out, "\n")
end

--- Runs variants = { {name=, run=function(n) end [, setup=, after=]} ... }
-- for `rounds` rounds of n iterations; sets v.per (ns per iteration, each
-- round), v.min, v.median, v.max. `now` defaults to pp.now.
function M.run(variants, rounds, n, now)
  for _, v in ipairs(variants) do v.per = {} end
  for r = 1, rounds do
    for k = 1, #variants do
      local v = variants[(k + r - 2) % #variants + 1]
      if v.setup then v.setup() end
      collectgarbage("collect")
      local t0 = now()
      v.run(n)
      local el = now() - t0
      if v.after then v.after() end
      v.per[r] = el / n
    end
  end
  for _, v in ipairs(variants) do
    local sm = require("phaseprobe").numeric.summary(v.per)
    v.min, v.max, v.median = sm.min, sm.max, sm.median
  end
  return variants
end

--- The fastest of n runs of fn, in ns (pp.now), and what its last run
-- returned.
function M.best(n, fn)
  local now = require("phaseprobe").now
  local b, result = math.huge, nil
  for _ = 1, n do
    local t0 = now()
    result = fn()
    local dt = now() - t0
    if dt < b then b = dt end
  end
  return b, result
end

--- Prints one row per variant: min, median, max, and median / the median of
-- variants[base] (default 1); a variant with v.invalid set (a reason) gets
-- that reason instead of figures.
function M.print(title, variants, base, unit)
  base = variants[base or 1].median
  unit = unit or "ns"
  print(("%-46s %9s %9s %9s %10s"):format(title, "min", "median", "max", "x " .. "base"))
  for _, v in ipairs(variants) do
    if v.invalid then
      print(("%-46s %s"):format(v.name, v.invalid))
    else
      print(("%-46s %9.1f %9.1f %9.1f %10.2f"):format(v.name, v.min, v.median, v.max, v.median / base))
    end
  end
  if unit ~= "ns" then print("(" .. unit .. ")") end
end

return M
