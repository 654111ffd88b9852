-- examples/saxpy.lua: one probed dispatch of saxpy (y = a*x + y) through
-- pp.cuda: load the PTX, stage the inputs, launch inside the timed window,
-- read back, verify against the CPU, and emit the probe's record.
--
--   lua5.4 examples/saxpy.lua [n]        (from the repository root, after make)
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"
local cu = pp.cuda

local ok, why = cu.available()
if not ok then
  io.stderr:write("saxpy: CUDA is not available: ", why, "\n")
  os.exit(1)
end

local n = math.tointeger(tonumber(arg[1] or "")) or (1 << 20)
local a = 2.5
local ctx = assert(cu.context(0))
print(ctx)
local mod = ctx:load_file("examples/kernels/saxpy.ptx")
local fn = mod:func("saxpy")
print(("module: %d bytes of PTX, JIT %.2f ms; saxpy: %d registers, params from %s")
  :format(mod.ptx_bytes, mod.jit_ns / 1e6, fn.registers, fn.param_source))

pp.enable()
pp.store.enable()
pp.begin()

local x, y
do
  local _ <close> = pp.phase("prepare")
  x, y = {}, {}
  for i = 1, n do
    x[i] = (i % 1000) * 0.25
    y[i] = (i % 7) - 3
  end
end

local dx, dy, s
do
  local _ <close> = pp.phase("stage")
  dx, dy = ctx:alloc(4 * n), ctx:alloc(4 * n)
  dx:upload(x, "f32")
  dy:upload(y, "f32")
  s = ctx:stream()
end

local w = s:window()
do
  local _ <close> = pp.phase("launch")
  w:launch_loop { fn = fn, grid = (n + 255) // 256, block = 256,
                  args = { n, a, dx, dy } }
end
w:close()
do
  local _ <close> = pp.phase("release")
  s:synchronize()
end
local window_ns, kernel_ns = w:collect()

local got
do
  local _ <close> = pp.phase("readback")
  got = dy:download("f32")
end
pp.counts { ptx_bytes = mod.ptx_bytes, buffers = 2, bindings = 4, fixpoint = 1,
            grid_blocks = (n + 255) // 256 }
pp.finish()
local rec = pp.emit()

local bad = 0
for i = 1, n do
  if got[i] ~= a * x[i] + y[i] then
    bad = bad + 1
  end
end
print(("saxpy n=%d: %s (%d mismatches)"):format(n, bad == 0 and "verified" or "WRONG", bad))
print(("device window %.1f us, kernel %.1f us, wall %.1f us, probe overhead %.1f us")
  :format(window_ns / 1e3, kernel_ns / 1e3, rec.wall_ns / 1e3, rec.probe_ns / 1e3))
ctx:close()
os.exit(bad == 0 and 0 or 1)
