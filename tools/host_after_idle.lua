-- How long a fixed piece of host work (a launch description's table and a
-- short loop, about 5 us) takes right after the thread spun, or slept, for
-- G us: on virtual machines the same work slows down after longer idles,
-- which a window's host gap then holds (make truth, part 2c: "open to
-- spin"). Median and p90 of 41 readings per length.
--   make build/phaseprobe_truth.so && lua5.4 tools/host_after_idle.lua
package.cpath = "./?.so;./build/?.so;" .. package.cpath
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
local pp = require "phaseprobe"
local truth = require "phaseprobe_truth"
local function work()
  local t = { fn = 1, grid = 1, block = 32, args = { 1, 0, 0 } }
  local s = 0
  for i = 1, 20 do s = s + #tostring(i) end
  return t, s
end
for _, g in ipairs { 25, 50, 100, 250, 500, 1000, 2000, 5000, 20000 } do
  local d = {}
  for r = 1, 41 do
    truth.spin_ns(g * 1000)
    local t0 = pp.now(); work(); d[r] = pp.now() - t0
    truth.sleep_ns(20000)
  end
  table.sort(d)
  print(("spin %6d us: work after it median %.2f us, p90 %.2f us"):format(g, d[21] / 1000, d[37] / 1000))
end
-- the same work after a sleep of the same length
for _, g in ipairs { 25, 1000, 20000 } do
  local d = {}
  for r = 1, 41 do
    truth.sleep_ns(g * 1000)
    local t0 = pp.now(); work(); d[r] = pp.now() - t0
  end
  table.sort(d)
  print(("sleep %6d us: work after it median %.2f us, p90 %.2f us"):format(g, d[21] / 1000, d[37] / 1000))
end
