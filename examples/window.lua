-- examples/window.lua: the two event pairs of the timed window, and what
-- their difference prices. A host spin of S microseconds is injected between
-- the outer start event and the launch loop; device_window_ns - kernel_ns
-- should come out at S plus a few microseconds of event cost, while
-- kernel_ns (a clock-spin kernel of fixed length) stays put.
--
--   lua5.4 examples/window.lua [kernel_us]   (from the repository root)
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"
local cu = pp.cuda

local ok, why = cu.available()
if not ok then
  io.stderr:write("window: CUDA is not available: ", why, "\n")
  os.exit(1)
end

local kernel_us = tonumber(arg[1]) or 1000
local ctx = assert(cu.context(0))
local spin = ctx:load_file("examples/kernels/spin.ptx"):func("spin")
local out = ctx:alloc(8)
local s = ctx:stream()
print(("%s; event-pair floor %d ns"):format(tostring(ctx), ctx.event_floor_ns))

local function one(spin_us)
  local w = s:window()
  if spin_us > 0 then
    w:spin_us(spin_us)
  end
  w:launch_loop { fn = spin, grid = 1, block = 32,
                  args = { math.floor(kernel_us * 1000), 0, out } }
  w:close()
  s:synchronize()
  return w:collect()
end

one(0) -- warm-up: the first launch loads the module lazily
print(("%10s %14s %12s %16s %10s"):format("spin_us", "window_us", "kernel_us",
  "window-kernel", "minus S"))
local worst = 0
for _, S in ipairs { 0, 25, 100, 500, 2000 } do
  local dw, k = one(S)
  local gap = (dw - k) / 1e3
  worst = math.max(worst, math.abs(gap - S))
  print(("%10d %14.1f %12.1f %16.1f %10.1f"):format(S, dw / 1e3, k / 1e3, gap, gap - S))
end
print(("turns of the spin loop in the last kernel: %d"):format(out:download("u64")[1]))
print(("largest |window - kernel - S|: %.1f us (expected: a few us)"):format(worst))
ctx:close()
