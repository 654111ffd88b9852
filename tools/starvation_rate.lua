-- Where does the window's starvation error come from? Injects host gaps of
-- 25 us to 20 ms inside the timed window (a tiny kernel after each) and
-- prints, per gap, medians over the samples of:
--   err       device_window_ns - kernel_ns - gap (the starvation error)
--   host      host time between the outer start and inner start record
--             calls, less the gap: the host's own overhead inside the window
--   lead-host the device's outer-start-to-inner-start interval less that host
--             interval: how much later the device stamped the inner start
--   tail      device time from the inner end to the outer end
-- err = host + (lead-host) + tail. A constant "host" is our overhead; a
-- "lead-host" that grows with the gap is the device stamping the first event
-- after an idle stretch late. Options: "nogc" stops Lua's collector;
-- "luaspin" injects the gap with a Lua loop over pp.now() (no PAUSE
-- instruction) instead of w:spin_us (rdtsc + PAUSE). GPU only:
--   . .gpu-lua/env.sh && make && lua5.4 tools/starvation_rate.lua [samples] [nogc] [luaspin]
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"
local cu = pp.cuda
local ok, why = cu.available()
if not ok then
  print("starvation_rate: no GPU here: " .. tostring(why))
  return
end
local samples = tonumber(arg[1] or "") or 15
local opts = {}
for i = 2, #arg do opts[arg[i]] = true end
if opts.nogc then collectgarbage("stop") end
local now = pp.now
local ctx = assert(cu.context(0))
local s = ctx:stream()
local spin = ctx:load_file("examples/kernels/spin.ptx"):func("spin")
local out = ctx:alloc(8)
local launch = { fn = spin, grid = 1, block = 32, args = { 20000, 0, out } }

local function median(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return c[(#c + 1) // 2]
end

local function sample(gap_us)
  local w = s:window()
  if opts.luaspin then
    local t = now() + gap_us * 1000
    while now() < t do end
  else
    w:spin_us(gap_us)
  end
  w:launch_loop(launch)
  w:close()
  s:synchronize()
  local dw, k = w:collect()
  local h = w.host_ns
  local gap = gap_us * 1000
  local host = h[2] - h[1]
  return dw - k - gap, host - gap, w.lead_ns - host, dw - k - w.lead_ns
end

sample(10)
print(("%8s %10s %10s %10s %10s   (ns, medians of %d%s)"):format("gap_us", "err", "host",
  "lead-host", "tail", samples, (opts.nogc and ", GC stopped" or "") .. (opts.luaspin and ", Lua spin" or "")))
for _, gap in ipairs { 25, 100, 500, 2000, 5000, 20000 } do
  local e, h, l, t = {}, {}, {}, {}
  for i = 1, samples do e[i], h[i], l[i], t[i] = sample(gap) end
  print(("%8d %10d %10d %10d %10d"):format(gap, median(e), median(h), median(l), median(t)))
end
