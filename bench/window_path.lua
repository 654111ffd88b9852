-- The host's work between a window's opening and its loop, from Lua: the
-- return from s:window, the launch description, and w:launch_loop reading
-- it, up to the spin it injects right before the loop (w.host_ns[5] -
-- host_ns[1]). CUPTI's timeline counts that time as host gap (make truth,
-- part 2c, "open to spin"). Two variants in alternating rounds: the
-- description built in the loop (as tools/truth.lua does) and one table
-- built once and passed again; their ratio says what building the table
-- costs. Also the same step in C (s:timed), the floor.
--
--   lua5.4 bench/window_path.lua [windows-per-round] [rounds]     (GPU machine)
--   FAKECUDA_TRACE=1 PHASEPROBE_LIBCUDA=build/libfakecuda.so \
--     PHASEPROBE_LIBCUPTI=build/libfakecupti.so lua5.4 bench/window_path.lua
--                 (no GPU: the fake driver and fake CUPTI, after make test-build;
--                  FAKECUDA_TRACE=1 lets the fake CUPTI hear the fake's launches,
--                  without which s:timed gets no timeline and its row says so)
--
-- Without a driver (or without CUPTI) it says why and exits 0.
local rounds = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/rounds.lua")
local pp = rounds.start()
local cu = pp.cuda

local N = math.tointeger(tonumber(arg[1] or "")) or 2000
local R = math.tointeger(tonumber(arg[2] or "")) or 7

local ctx, why = cu.context(0)
if not ctx then
  print("window_path: skipped, no CUDA context: " .. tostring(why))
  return
end
local started, cwhy = ctx:kernel_source("cupti")
if not started then
  print("window_path: skipped, no CUPTI: " .. tostring(cwhy))
  return
end
print(rounds.clock_note(pp))
local spin = ctx:load_file(rounds.root .. "/examples/kernels/spin.ptx"):func("spin")
local s = ctx:stream()

-- Windows of a 1 us spin kernel after a 1 us injected gap; readings after
-- every 100 windows (a wait per window would cost each a flush).
local function windows(n, make_desc)
  local v, pending = {}, {}
  for i = 1, n do
    local w = s:window { source = "cupti" }
    w:launch_loop(make_desc())
    w:close()
    w:collect()
    pending[#pending + 1] = w
    if #pending == 100 or i == n then
      for _, x in ipairs(pending) do x:wait(2000) end
      pending = {}
    end
    v[i] = w.host_ns[5] - w.host_ns[1]
  end
  return rounds.median(v)
end

local once = { fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 }, source = "cupti", spin_us = 1 }
local variants = {
  { name = "description built in the loop", run = function(n)
    return windows(n, function()
      return { fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 }, source = "cupti", spin_us = 1 }
    end)
  end },
  { name = "one description, built once", run = function(n)
    return windows(n, function() return once end)
  end },
  { name = "in C (s:timed)", run = function(n)
    local v = {}
    for i = 1, n do
      local ok, twhy, t = s:timed { fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 }, spin_us = 1 }
      if not (ok and t) then return nil, twhy or "no timeline" end
      v[i] = t.host_ns[5] - t.host_ns[1]
    end
    return rounds.median(v)
  end },
}

-- Each round's figure is the median open-to-spin of its windows (ns).
local per = {}
for _, v in ipairs(variants) do per[v.name] = {} end
for r = 1, R do
  for k = 0, #variants - 1 do
    local v = variants[(r + k - 1) % #variants + 1]
    if not v.lost then
      local m, lost = v.run(N)
      if m then table.insert(per[v.name], m) else v.lost = lost end
    end
  end
end
print(("open to spin, median ns of %d windows a round, %d rounds (min / median / max over rounds):"):format(N, R))
local base = rounds.median(per[variants[1].name])
for _, v in ipairs(variants) do
  local t = per[v.name]
  if v.lost then
    print(("  %-34s no reading: %s"):format(v.name, v.lost))
  else
    table.sort(t)
    local m = rounds.median(t)
    print(("  %-34s %7.0f / %7.0f / %7.0f   x%.2f of the first"):format(v.name, t[1], m, t[#t], m / base))
  end
end
