-- Is the window's starvation error a constant or a rate? Injects host gaps of
-- 25 us to 20 ms inside the timed window (a tiny kernel after each) and prints
-- the median of (device_window_ns - kernel_ns - gap) per gap. A constant
-- error is host work between the events; an error growing with the gap is a
-- rate difference between the host clock (which times the spin) and the
-- device clock (which times the events). GPU only:
--   . .gpu-lua/env.sh && make && lua5.4 tools/starvation_rate.lua
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"
local cu = pp.cuda
local ok, why = cu.available()
if not ok then
  print("starvation_rate: no GPU here: " .. tostring(why))
  return
end
local ctx = assert(cu.context(0))
local s = ctx:stream()
local spin = ctx:load_file("examples/kernels/spin.ptx"):func("spin")
local out = ctx:alloc(8)

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function sample(gap_us)
  local w = s:window()
  w:spin_us(gap_us)
  w:launch_loop { fn = spin, grid = 1, block = 32, args = { 20000, 0, out } }
  w:close()
  s:synchronize()
  local dw, k = w:collect()
  return dw - k - gap_us * 1000
end

sample(10)
print(("%10s %14s %14s %16s"):format("gap_us", "median err ns", "min err ns", "err / gap (ppm)"))
for _, gap in ipairs { 25, 100, 500, 2000, 5000, 20000 } do
  local t = {}
  for i = 1, 9 do t[i] = sample(gap) end
  local m = median(t)
  print(("%10d %14d %14d %16.0f"):format(gap, m, t[1], m / (gap * 1000) * 1e6))
end
