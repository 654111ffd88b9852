-- The host's work between a window's opening and its loop, from Lua: the
-- return from s:window, the launch description, and w:launch_loop reading
-- it, up to the spin it injects right before the loop (w.host_ns[5] -
-- host_ns[1]). CUPTI's timeline counts that time as host gap (make truth,
-- part 2c, "open to spin"). Variants in alternating rounds: the
-- description built in the loop, one table built once and passed again
-- (their ratio says what building the table costs), a launch prepared once
-- with fn:prepare (what tools/truth.lua does: reading the description
-- leaves the window path), the first with the collector stopped and with
-- the CUPTI flusher idle (what the collector's steps and the flushes
-- add). Also the same step in C (s:timed), the floor.
--
--   lua5.4 bench/window_path.lua [windows-per-round] [rounds] [gaps-us]  (GPU machine;
--                 gaps a comma list, default 1: e.g. 2000 7 25,250,2000)
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

-- GAPS: the injected gaps (us), the first argument's list after the
-- counts; tools/truth.lua part 2c uses 25 us to 20 ms. Each window's
-- open-to-spin is split at two Lua stamps (pp.now(), on the probe clock as
-- host_ns): the return from s:window, and the call of w:launch_loop; so the
-- three parts are s:window's return, building the description, and
-- w:launch_loop reading it up to its spin.
local GAPS = {}
for g in (arg[3] or "1"):gmatch("[^,]+") do GAPS[#GAPS + 1] = assert(tonumber(g), "gap list: " .. g) end

local now = pp.now
-- Windows of a 1 us spin kernel after the injected gap; readings after
-- every 100 windows (a wait per window would cost each a flush).
local function windows(n, make_desc, gap)
  local v, ret, build, read, pending = {}, {}, {}, {}, {}
  for i = 1, n do
    local w = s:window { source = "cupti" }
    local t1 = now()
    local d = make_desc(gap)
    local t2 = now()
    w:launch_loop(d)
    w:close()
    w:collect()
    pending[#pending + 1] = w
    if #pending == 100 or i == n then
      for _, x in ipairs(pending) do x:wait(2000) end
      pending = {}
    end
    local h = w.host_ns
    v[i], ret[i], build[i], read[i] = h[5] - h[1], t1 - h[1], t2 - t1, h[5] - t2
  end
  return rounds.median(v), { rounds.median(ret), rounds.median(build), rounds.median(read) }
end

local once = { fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 }, source = "cupti", spin_us = 1 }
local function fresh_desc(gap)
  return { fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 }, source = "cupti", spin_us = gap }
end
local variants = {
  { name = "description built in the loop", run = function(n, gap)
    return windows(n, fresh_desc, gap)
  end },
  { name = "one description, built once", run = function(n, gap)
    once.spin_us = gap
    return windows(n, function() return once end, gap)
  end },
  { name = "prepared once (fn:prepare)", run = function(n, gap)
    local p = spin:prepare{ grid = 1, block = 32, args = { 1000, 0, 0 }, source = "cupti", spin_us = gap }
    return windows(n, function() return p end, gap)
  end },
  { name = "built in the loop, collector off", run = function(n, gap)
    collectgarbage("stop")
    local m, split = windows(n, fresh_desc, gap)
    collectgarbage("restart")
    collectgarbage()
    return m, split
  end },
  { name = "built in the loop, no flushes", run = function(n, gap)
    local was = cu.cupti_flush_ms()
    cu.cupti_flush_ms(1000) -- the flusher's longest period: none inside a round
    local m, split = windows(n, fresh_desc, gap)
    cu.cupti_flush_ms(was)
    return m, split
  end },
  { name = "in C (s:timed)", run = function(n, gap)
    local v = {}
    for i = 1, n do
      local ok, twhy, t = s:timed { fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 }, spin_us = gap }
      if not (ok and t) then return nil, twhy or "no timeline" end
      v[i] = t.host_ns[5] - t.host_ns[1]
    end
    return rounds.median(v)
  end },
}

-- Each round's figure is the median open-to-spin of its windows (ns).
for _, gap in ipairs(GAPS) do
  local per, parts = {}, {}
  for _, v in ipairs(variants) do per[v.name], parts[v.name] = {}, {}; v.lost = nil end
  for r = 1, R do
    for k = 0, #variants - 1 do
      local v = variants[(r + k - 1) % #variants + 1]
      if not v.lost then
        local m, split = v.run(N, gap)
        if m then
          table.insert(per[v.name], m)
          if split then table.insert(parts[v.name], split) end
        else
          v.lost = split
        end
      end
    end
  end
  print(("gap %g us: open to spin, median ns of %d windows a round, %d rounds (min / median / max over rounds);"
    .. " its parts (medians): s:window's return / the description / launch_loop to its spin"):format(gap, N, R))
  local base = rounds.median(per[variants[1].name])
  for _, v in ipairs(variants) do
    local t = per[v.name]
    if v.lost then
      print(("  %-34s no reading: %s"):format(v.name, tostring(v.lost)))
    else
      table.sort(t)
      local m = rounds.median(t)
      local line = ("  %-34s %7.0f / %7.0f / %7.0f   x%.2f of the first"):format(v.name, t[1], m, t[#t], m / base)
      local ps = parts[v.name]
      if #ps > 0 then
        local col = function(j) local c = {} for i, x in ipairs(ps) do c[i] = x[j] end return rounds.median(c) end
        line = line .. ("   parts %5.0f / %5.0f / %5.0f"):format(col(1), col(2), col(3))
      end
      print(line)
    end
  end
end
