-- bench/cuda_costs.lua: host cost of the driver calls the probe's timed
-- window is made of (GPU only; without a driver it says so and exits 0).
--
--   lua5.4 bench/cuda_costs.lua [samples]      (or: make bench)
--
-- Prints p50/p99 of cuLaunchKernel (a tiny kernel), cuEventRecord, the
-- device time of a back-to-back event pair (the floor under any event-pair
-- figure), and the window's own gap (device_window_ns - kernel_ns with no
-- host work injected). Ratios are against the launch p50 of the same run.
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"
local cu = pp.cuda

local ok, why = cu.available()
if not ok then
  print("cuda_costs: skipped, CUDA is not available: " .. why)
  os.exit(0)
end

local samples = math.tointeger(tonumber(arg[1] or "")) or 5000

local function pct(t, p)
  local s = {}
  for i, v in ipairs(t) do
    s[i] = v
  end
  table.sort(s)
  return s[math.max(1, math.ceil(#s * p / 100))]
end

local ctx = assert(cu.context(0))
local fn = ctx:load_file("examples/kernels/saxpy.ptx"):func("saxpy")
local buf = ctx:alloc(16)
local s = ctx:stream()
print(("%s, driver %d, clock %s"):format(tostring(ctx), cu.driver().version,
  pp.clock().name))

-- a tiny launch: n = 0, every thread exits at once
local launch = fn:launch_costs { grid = 1, block = 32, args = { 0, 1.0, buf, buf },
                                 stream = s, samples = samples }
local ev = ctx:event_costs(samples)

local spin = ctx:load_file("examples/kernels/spin.ptx"):func("spin")
local gaps = {}
for i = 1, math.min(samples, 500) do
  local w = s:window()
  w:launch_loop { fn = spin, grid = 1, block = 32, args = { 1000, 0, buf } }
  w:close()
  s:synchronize()
  local dw, k = w:collect()
  gaps[i] = dw - k
end

local base = pct(launch, 50)
local function row(name, t)
  local p50, p99 = pct(t, 50), pct(t, 99)
  print(("%-34s p50 %9.0f ns   p99 %9.0f ns   min %9.0f ns   p50/launch %.2f")
    :format(name, p50, p99, pct(t, 0), p50 / base))
end
print(("samples: %d (window gap: %d)"):format(samples, #gaps))
row("cuLaunchKernel host cost", launch)
row("cuEventRecord host cost", ev.record)
row("event pair floor (device)", ev.pair)
row("window - kernel, nothing injected", gaps)
print(("probe clock read: %.1f ns"):format(pp.clock().read_ns[pp.clock().name]))
ctx:close()
