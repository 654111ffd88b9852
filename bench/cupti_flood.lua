-- Windows read by CUPTI opened back to back, as a dispatcher's are (open
-- nearly all the time): how many got a span, and how many were refused one
-- because all 256 slots waited for their kernels' records. Reports, never
-- asserts: whether the module's flusher thread gets a core in time depends
-- on the machine's load (spec/helpers/cupti_helper.c "wakes the flusher
-- inside a window" checks the mechanism itself).
--   lua5.4 bench/cupti_flood.lua [windows]                (a GPU with CUPTI)
--   FAKECUDA_TRACE=1 PHASEPROBE_LIBCUDA=build/libfakecuda.so \
--     PHASEPROBE_LIBCUPTI=build/libfakecupti.so lua5.4 bench/cupti_flood.lua
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = here .. "/../lua/?.lua;" .. here .. "/../lua/?/init.lua;" .. package.path
package.cpath = here .. "/../?.so;" .. package.cpath
local pp = require "phaseprobe"
local cu = pp.cuda

local N = math.tointeger(tonumber(arg[1] or "")) or 2000
local ok, why = cu.available()
if not ok then
  print("cupti_flood: skipped, CUDA is not available: " .. tostring(why))
  os.exit(0)
end
local ctx = assert(cu.context(0))
local started, swhy = ctx:kernel_source("cupti")
if not started then
  print("cupti_flood: skipped, CUPTI is not available: " .. tostring(swhy))
  os.exit(0)
end
local s = ctx:stream()
local spin = ctx:load_file(here .. "/../examples/kernels/spin.ptx"):func("spin")
local p = spin:prepare{ grid = 1, block = 32, args = { 1000, 0, 0 } }
pp.enable(); pp.sink("none")
local before = cu.cupti_info()
local t0 = pp.now()
for i = 1, N do
  pp.begin()
  local w = s:window()
  w:launch_loop(p)
  w:close(); pp.finish(); w:collect()
  pp.emit{ seq = i }
end
local took = pp.now() - t0
assert(pp.flush(10000), "the records did not all come within 10 s")
local info = cu.cupti_info()
print(("%d windows back to back in %.1f ms: %d got a span, %d were refused one; %d flushes"):format(N,
  took / 1e6, info.spans - before.spans, info.spans_refused - before.spans_refused,
  info.flushes - before.flushes))
