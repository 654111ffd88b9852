-- Ground truth and cost of the probe, on a GPU. One table, PASS/MISS per
-- target with its margin; also written to $TRUTH_OUT when set.
--
--   make truth                         (on the GPU machine)
--   TRUTH_OUT=truth.txt make truth
--
-- 1. event-pair kernel_ns against CUPTI's kernel duration for clock-spin
--    kernels of 10 us .. 10 ms (the same launches, CUPTI read after each
--    batch): the raw error (median, p95, max) and the calibrated one, the
--    calibration being ctx:calibrate_events{source = "cupti"} (floor and
--    error by kernel length, measured in its own batches); target: the
--    calibrated median within max(2 us, 1 %) of CUPTI; the p95 beside the
--    kernel_error_ns the calibration claims.
-- 2. event pairs: device_window_ns - kernel_ns against a host gap of
--    25 us .. 20 ms injected right before the loop; target: within 10 us
--    of the gap for every reading (the reference's starvation figure).
-- 2c. CUPTI's timeline on the probe clock, the same gaps: host_gap_ns
--    against the injected gap, and against the host's own reading of the
--    interval from the opening to the launch call; targets: median within
--    2 us, p95 within 5 us; launch latency (median, p95) beside it.
-- 3. the probe clock (pp.now) against CLOCK_MONOTONIC over a 1 s and a 10 s
--    window (the other parts run inside the windows); target: drift <= 0.05 %.
-- 4. perturbation: wall per dispatch of a synthetic dispatch (fixed host
--    phases, one launch, sync, readback) with the probe disabled (A),
--    enabled without a kernel source (B), with the event window (C), with
--    CUPTI's timeline as the source (D), interleaved ABCD DCBA in blocks;
--    targets: B adds <= 1 % to A over the wall (begin to the end of the last
--    phase) and <= 2 % over the whole dispatch (with pp.finish, the window's
--    collect and pp.emit); the CUPTI source adds <= 2 us to B per dispatch;
--    the event window's cost stated.
--    4b: the reference dispatcher (phaseprobe.dispatch) when it is
--    installed: disabled, enabled (<= 1 %), enabled with CUPTI (the CUPTI
--    source adds <= 1 % of the disabled wall).
--
-- TRUTH_LONG_S changes the long drift window (default 10 s; the row says
-- which length was measured); TRUTH_TIMED_IDLE_MS an idle after each s:timed
-- of part 2c (default 0); TRUTH_CUPTI_FLUSH_MS the CUPTI flusher's period
-- (pp.cuda.cupti_flush_ms; default the module's). Exit status 0 when the harness ran (whatever
-- the verdicts), 1 when it could not.
package.cpath = "./?.so;./build/?.so;" .. package.cpath
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
local pp = require "phaseprobe"
local cu = pp.cuda
local truth = require "phaseprobe_truth" -- tools/truth_module.c (make truth)
local fmt = string.format

local LONG_S = tonumber(os.getenv("TRUTH_LONG_S") or "10") or 10
local SIZES_US = { 10, 30, 100, 300, 1000, 3000, 10000 }
local REPS1 = 20
local GAPS_US = { 25, 50, 100, 250, 500, 1000, 2000, 5000, 20000 }
local REPS2 = 20
local GAP_KERNEL_NS = 10000
-- 2c's kernel: 10 us, as part 2's. A close after the launch call's return
-- (and the kernel's end) adds a tail to host_gap_ns that the host's reading
-- (open to the launch call) does not hold. (100 us kernels queued behind each other in back-to-back windows
-- came back from CUPTI untimed in one window of each batch: not used.)
local GAP2C_KERNEL_NS = 10000
local CAL_SAMPLES = 200
local ROUNDS4, BLOCK4 = 10, 40
local TOL_STARVE_NS = 10000
local DRIFT_MAX = 0.0005 -- 0.05 %
local HOST_MAX = 0.01    -- 1 %
local WHOLE_MAX = 0.02   -- 2 %
local CUPTI_COST_MAX = 2000 -- ns per dispatch
local GAP_MEDIAN, GAP_P95 = 2000, 5000
local TIMED_IDLE_MS = tonumber(os.getenv("TRUTH_TIMED_IDLE_MS") or "0") or 0
local FLUSH_MS = tonumber(os.getenv("TRUTH_CUPTI_FLUSH_MS") or "")

-- ---- output -------------------------------------------------------------------
local lines, rows = {}, {}
local counts = { PASS = 0, MISS = 0 }

local function say(...)
  local l = fmt(...)
  lines[#lines + 1] = l
  io.write(l, "\n")
  io.flush()
end

local function us(ns) return ns and fmt("%.2f us", ns / 1000) or "-" end
local function sus(ns) return ns and fmt("%+.2f us", ns / 1000) or "-" end

-- verdict: "PASS", "MISS" or a word that is not a verdict ("STATED", "info").
local function row(part, case, measured, target, margin, verdict)
  rows[#rows + 1] = { part, case, measured, target or "", margin or "", verdict or "" }
  if counts[verdict] then counts[verdict] = counts[verdict] + 1 end
end

local function check(part, case, measured, value, limit, unit_fmt, target_text)
  local ok = value ~= nil and value <= limit
  row(part, case, measured, target_text, value and unit_fmt(limit - value) or "no reading",
    ok and "PASS" or "MISS")
end

local function render()
  local head = { "part", "case", "measured", "target", "margin", "verdict" }
  local w = {}
  for i, h in ipairs(head) do w[i] = #h end
  for _, r in ipairs(rows) do
    for i, c in ipairs(r) do if #c > w[i] then w[i] = #c end end
  end
  local function line(r)
    local cells = {}
    for i, c in ipairs(r) do cells[i] = c .. string.rep(" ", w[i] - #c) end
    say("| %s |", table.concat(cells, " | "))
  end
  line(head)
  local sep = {}
  for i = 1, #head do sep[i] = string.rep("-", w[i]) end
  say("|-%s-|", table.concat(sep, "-|-"))
  for _, r in ipairs(rows) do line(r) end
end

local function finish(status)
  local path = os.getenv("TRUTH_OUT")
  if path and path ~= "" then
    local f, err = io.open(path, "w")
    if f then
      f:write(table.concat(lines, "\n"), "\n")
      f:close()
    else
      io.stderr:write("truth: cannot write TRUTH_OUT: ", err, "\n")
    end
  end
  os.exit(status)
end

-- ---- statistics ------------------------------------------------------------------
local function sorted(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s
end
local function median(t) local s = sorted(t); return s[(#s + 1) // 2] end
local function quantile(t, q)
  local s = sorted(t)
  if #s == 0 then return nil end
  return s[math.floor(q * (#s - 1) + 0.5) + 1]
end
local function mean(t)
  local a = 0
  for _, v in ipairs(t) do a = a + v end
  return #t > 0 and a / #t or nil
end
local function maxabs(t)
  local m = nil
  for _, v in ipairs(t) do if not m or math.abs(v) > m then m = math.abs(v) end end
  return m
end

-- ---- setup -------------------------------------------------------------------------
local ok, why = cu.available()
if not ok then
  say("truth: CUDA is not available: %s", tostring(why))
  finish(1)
end
local ctx = assert(cu.context(0))
local s = ctx:stream()
local spin = ctx:load_file("examples/kernels/spin.ptx"):func("spin")
local cupti_ok, cupti_why = cu.cupti_available()
if FLUSH_MS then cu.cupti_flush_ms(FLUSH_MS) end
pp.sink("none")
pp.store.enable(false)
pp.disable()
local clk = pp.clock()
local drv = cu.driver()
say("phaseprobe truth harness %s", pp.version)
say("device: %s (sm_%d%d, %d SMs), driver %d (%s)", ctx.name, ctx.cc_major, ctx.cc_minor,
  ctx.sm_count, drv.version, drv.path)
say("CUPTI: %s", cupti_ok and fmt("%s, API %d, records collected every %d ms", cu.cupti_info().path, cu.cupti_info().version, cu.cupti_flush_ms())
  or ("unavailable: " .. tostring(cupti_why)))
say("probe clock: %s (%s)", clk.name, clk.reason)

local long0 = { truth.clock_pair() } -- both drift windows start here
local t_start = long0[2]

-- One window around one spin kernel of `ns`, an optional host gap spun in C
-- right before the loop. source "event": the event pairs; "both": the pairs
-- and CUPTI (read later with w:wait()); "cupti": CUPTI's timeline only.
-- Each launch is prepared once (fn:prepare), as a dispatcher that launches
-- the same kernel again would: between the window's opening and its loop
-- the binding then only checks it.
local prepared = {}
local function window(ns, source, gap_us)
  local key = ("%d %s %s"):format(ns, source, tostring(gap_us))
  local p = prepared[key]
  if not p then
    p = spin:prepare{ grid = 1, block = 32, args = { ns, 0, 0 },
                      source = source == "event" and "event" or "cupti", spin_us = gap_us }
    prepared[key] = p
  end
  local w = s:window{ source = source == "cupti" and "cupti" or "event" }
  w:launch_loop(p)
  w:close()
  local win, ker = w:collect()
  return w, win, ker
end

-- CUPTI's readings of a batch of windows, after the batch: the first
-- wait's flushes bring them all (a flush per window would cost each 55 us).
local function wait_all(ws)
  for _, w in ipairs(ws) do w:wait(2000) end
end

local function sleep_until(mono_ns)
  local now = truth.monotonic_ns()
  if mono_ns > now then truth.sleep_ns(mono_ns - now) end
end

-- ---- part 2: starvation against an injected gap (CUPTI off) ---------------------------
local function part2()
  for _ = 1, 3 do window(GAP_KERNEL_NS, "event", 10) end
  for _, gap in ipairs(GAPS_US) do
    local errs, starv = {}, {}
    for i = 1, REPS2 do
      local _, win, ker = window(GAP_KERNEL_NS, "event", gap)
      starv[i] = win - ker
      errs[i] = starv[i] - gap * 1000
    end
    local worst = maxabs(errs)
    check("2", fmt("gap %d us: window - kernel", gap),
      fmt("mean %s, error mean %s, max |error| %s (n=%d)", us(mean(starv)), sus(mean(errs)), us(worst), REPS2),
      worst, TOL_STARVE_NS, sus, "|error| <= 10 us")
  end
end

-- ---- part 2c: CUPTI's timeline against the same gaps -----------------------------------
-- One reading: the timeline `t` of a window whose host stamps are `h` (open,
-- loop start, loop end, close, spun gap's start and end), `gap_ns` spun.
local function gap_sample(acc, t, h, gap_ns)
  local function add(k, v) acc[k] = acc[k] or {}; table.insert(acc[k], v) end
  local host = h[2] - h[1] -- the host's own reading: open to the loop's first launch call
  add("injected", t.host_gap_ns - gap_ns)
  add("host", t.host_gap_ns - host)
  add("lat", t.launch_latency_ns)
  add("ours", host - gap_ns)
  add("before", h[5] - h[1])
  add("over", h[6] - h[5] - gap_ns)
  add("after", h[2] - h[6])
  add("entry", t.launch_at_ns - host)
  add("loop", h[3] - h[2])
end

-- Two rows per variant: host_gap_ns against the gap injected (the issue's
-- target: whatever else the host did between the opening and the launch
-- call counts as host gap too, so the harness's own overhead is in it), and
-- against the host's own reading of the same interval (open to the launch
-- call, on the probe clock): the timeline's error alone.
local function gap_rows(case, acc, lost, judged, extra)
  if lost or not acc.injected then
    row("2c", case, "CUPTI gave no reading: " .. tostring(lost), "", "no reading", judged and "MISS" or "")
    return
  end
  local target = judged and "median <= 2 us, p95 <= 5 us" or "(stated)"
  local function verdict(list)
    local m, p95 = median(list), quantile(list, 0.95)
    local ok = math.abs(m) <= GAP_MEDIAN and math.abs(p95) <= GAP_P95
    local text = fmt("error median %s, p95 %s, max %s (n=%d)", sus(m), sus(p95), sus(quantile(list, 1)), #list)
    if not judged then return text, "", "" end
    return text, fmt("%s / %s", sus(GAP_MEDIAN - math.abs(m)), sus(GAP_P95 - math.abs(p95))),
      ok and "PASS" or "MISS"
  end
  local text, margin, v = verdict(acc.injected)
  row("2c", case .. " vs injected", fmt("%s: open to loop less the gap %s (open to spin %s, spin "
      .. "overshoot %s, spin to loop %s), loop to CUPTI's launch callback %s, the launch call %s (medians); "
      .. "launch latency median %s, p95 %s", text, sus(median(acc.ours)), sus(median(acc.before)),
      sus(median(acc.over)), sus(median(acc.after)), sus(median(acc.entry)), us(median(acc.loop)),
      us(median(acc.lat)), us(quantile(acc.lat, 0.95))) .. (extra or ""),
    target, margin, v)
  text, margin, v = verdict(acc.host)
  row("2c", case .. " vs host reading", text, target, margin, v)
end

local function part2c()
  local started, why2 = nil, cupti_why
  if cupti_ok then started, why2 = ctx:kernel_source("cupti") end
  if not started then
    row("2c", "CUPTI timeline: host gap", "not measured: " .. tostring(why2), "", "no reading", "MISS")
    return
  end
  for _, gap in ipairs(GAPS_US) do
    -- from Lua: windows back to back, read after the batch
    local ws = {}
    local before = cu.cupti_info()
    for i = 1, REPS2 + 1 do ws[i] = window(GAP2C_KERNEL_NS, "cupti", gap) end
    local after = cu.cupti_info() -- the dispatch paths' waits for the table lock, before any wait
    wait_all(ws)
    local acc, lost = {}, nil
    for i = 2, #ws do -- the first follows the last batch's flushes
      local w = ws[i]
      if not w.timeline then
        lost = w.cupti_why or "no reading"
      else
        gap_sample(acc, w.timeline, w.host_ns, gap * 1000)
      end
    end
    -- the same gap spun in C between the window's opening and its loop
    -- (s:timed): no binding in between, but it waits for CUPTI after each
    -- window (flushes of 55 us each on an H200, the "launch call" figure
    -- shows what they leave to the next window; TRUTH_TIMED_IDLE_MS adds an
    -- idle between): its rows are stated, not judged.
    local cacc, clost = {}, nil
    for i = 1, REPS2 + 1 do
      if i > 1 and TIMED_IDLE_MS > 0 then truth.sleep_ns(TIMED_IDLE_MS * 1000000) end
      local _, _, t = s:timed{ fn = spin, grid = 1, block = 32, args = { GAP2C_KERNEL_NS, 0, 0 },
                               spin_us = gap }
      if not t then
        clost = "no reading"
      elseif i > 1 then
        gap_sample(cacc, t, t.host_ns, gap * 1000)
      end
    end
    local case = fmt("gap %d us: host_gap_ns", gap)
    gap_rows(case .. ", s:timed", cacc, clost, false)
    gap_rows(case .. ", window", acc, lost, true,
      fmt("; the table lock held at a span's start or a launch call %d times in %d windows, %s waited in all",
        after.lock_waits - before.lock_waits, REPS2 + 1, us(after.lock_wait_ns - before.lock_wait_ns)))
  end
  ctx:kernel_source("event")
end

-- ---- part 1: the event pair against CUPTI (CUPTI on) ----------------------------------
local floor_c, cal_c, floor_e, cal_e

local function calibrations(cupti_on, why_off)
  if cupti_on then
    local f, c = ctx:calibrate_events{ samples = CAL_SAMPLES, source = "cupti" }
    if f and c.method == "cupti" then
      floor_c, cal_c = f, c
    else
      why_off = f and c.why or c
    end
  end
  floor_e, cal_e = ctx:calibrate_events{ samples = CAL_SAMPLES, source = "event" }
  if floor_c then
    say("event floor (CUPTI method, %d samples of an empty kernel): %s = median(pair - CUPTI); "
      .. "pair - CUPTI min %s, p90 %s, max %s; empty kernel per CUPTI %s", cal_c.samples, us(floor_c),
      us(cal_c.diff_min_ns), us(cal_c.diff_p90_ns), us(cal_c.diff_max_ns), us(cal_c.cupti_median_ns))
  else
    say("event floor (CUPTI method): not measured: %s", tostring(why_off))
  end
  say("event floor (event-only method, %d samples): %s = median pair around an empty launch; "
    .. "min %s, p90 %s, max %s", cal_e.samples, us(floor_e), us(cal_e.event_min_ns),
    us(cal_e.event_p90_ns), us(cal_e.event_max_ns))
  return why_off
end

local function part1()
  local started, swhy = nil, cupti_why
  if cupti_ok then started, swhy = ctx:kernel_source("cupti") end
  local why1 = calibrations(started, swhy)
  if not floor_c then
    for _, size in ipairs(SIZES_US) do
      row("1", fmt("spin %d us", size), "no CUPTI reference: " .. tostring(why1), "max(2 us, 1 %)", "no reading", "MISS")
    end
    if started then ctx:kernel_source("event") end
    return
  end
  -- the calibration by kernel length that windows now take floor and error from
  for _, p in ipairs(cal_c.points or {}) do
    say("calibration point: kernel %s per CUPTI, pair %s: floor %s, p95 error %s (n=%d)",
      us(p.kernel_ns), us(p.pair_ns), us(p.floor_ns), us(p.error_ns), p.samples)
  end
  for _, size in ipairs(SIZES_US) do
    local ws = {}
    for i = 1, REPS1 + 1 do ws[i] = window(size * 1000, "both") end
    wait_all(ws)
    local raw, cal, claimed, ref, lost = {}, {}, {}, {}, nil
    for i = 2, #ws do
      local w = ws[i]
      local c, e = w.cupti_kernel_ns, w.event_kernel_ns
      if not c then
        lost = w.cupti_why or "no CUPTI reading"
      else
        ref[#ref + 1] = c
        raw[#raw + 1] = e - c
        cal[#cal + 1] = w.kernel_calibrated_ns - c
      end
    end
    local tol = math.max(2000, (median(ref) or 0) / 100)
    local tol_text = fmt("median |cal - CUPTI| <= %s", us(tol))
    if lost then
      row("1", fmt("spin %d us", size), fmt("CUPTI missed readings (%d of %d): %s", REPS1 - #ref, REPS1, lost),
        tol_text, "no reading", "MISS")
    else
      local m = median(cal)
      local _, err_claim = nil, nil
      -- what kernel_error_ns says for a reading of this length
      for _, p in ipairs(cal_c.points or {}) do
        if not err_claim or math.abs(p.kernel_ns - size * 1000) < math.abs(err_claim[1] - size * 1000) then
          err_claim = { p.kernel_ns, p.error_ns }
        end
      end
      local absd = {}
      for i, v in ipairs(cal) do absd[i] = math.abs(v) end
      row("1", fmt("spin %d us: pair vs CUPTI", size),
        fmt("CUPTI median %s; raw pair-CUPTI median %s p95 %s max %s; calibrated median %s p95 |d| %s max |d| %s "
          .. "(kernel_error_ns claims %s) (n=%d)",
          us(median(ref)), sus(median(raw)), sus(quantile(raw, 0.95)), sus(quantile(raw, 1)),
          sus(m), us(quantile(absd, 0.95)), us(quantile(absd, 1)),
          err_claim and us(err_claim[2]) or "-", #ref),
        tol_text, sus(tol - math.abs(m)), math.abs(m) <= tol and "PASS" or "MISS")
    end
  end
  ctx:kernel_source("event")
end

-- ---- part 4: perturbation -------------------------------------------------------------
local HOST = { prepare = 20000, ptx = 15000, modkey = 2000, resolve = 5000, lease = 1000 }
local KERNEL4_NS = 30000

-- mode "spins": the same nine scopes, begin, finish and emit with spins in
-- place of the CUDA calls (each about as long as those calls take there),
-- the control for the synthetic dispatch's figure: what the probe adds
-- where nothing else runs between its calls.
local SPINS = { stage = 6000, launch = 8000, release = 32000, readback = 6000 }
local function synthetic(mode, buf, data, args)
  local phase, spin_ns = pp.phase, truth.spin_ns
  local events = mode == "event" or mode == "cupti" -- a window (cupti: no events)
  local spins = mode == "spins"
  pp.begin()
  do local _ <close> = phase("prepare"); spin_ns(HOST.prepare) end
  do local _ <close> = phase("ptx"); spin_ns(HOST.ptx) end
  do local _ <close> = phase("modkey"); spin_ns(HOST.modkey) end
  local w
  do
    local _ <close> = phase("stage")
    if spins then spin_ns(SPINS.stage) else buf:upload(data) end
    if events then w = s:window() end
  end
  do local _ <close> = phase("resolve"); spin_ns(HOST.resolve) end
  do local _ <close> = phase("lease"); spin_ns(HOST.lease) end
  do
    local _ <close> = phase("launch")
    if spins then
      spin_ns(SPINS.launch)
    elseif events then
      w:launch_loop{ fn = spin, grid = 1, block = 32, args = args, source = mode }
    else
      spin:launch{ grid = 1, block = 32, args = args, stream = s }
    end
  end
  do
    local _ <close> = phase("release")
    if spins then spin_ns(SPINS.release) else s:synchronize() end
  end
  do
    local _ <close> = phase("readback")
    if w then w:close() end
    if spins then spin_ns(SPINS.readback) else buf:download() end
  end
  local t_phases = pp.now() -- the phases are over: the wall's end
  pp.finish()
  if w then w:collect() end
  return pp.emit(), t_phases
end

-- Runs blocks of `conds` (each {name=, setup=, teardown=, run=}) in the order
-- ABC.. ..CBA for `rounds`, after one warm-up block each. Returns per
-- condition {walls=, probe=, halves={first, second}}.
local function interleave(conds, rounds, block)
  local res = {}
  for _, c in ipairs(conds) do
    res[c.name] = { walls = {}, inwall = {}, probe = {}, halves = { {}, {} } }
  end
  local function run_block(c, keep, half)
    if c.setup then c.setup() end
    local r = res[c.name]
    for _ = 1, block do
      local t0 = pp.now()
      local rec, t_phases = c.run()
      local t1 = pp.now()
      local wall = t1 - t0
      if keep then
        r.walls[#r.walls + 1] = wall
        r.inwall[#r.inwall + 1] = (t_phases or t1) - t0
        local h = r.halves[half]
        h[#h + 1] = wall
        if rec then r.probe[#r.probe + 1] = rec.probe_ns end
      end
    end
    if c.teardown then c.teardown() end
  end
  for _, c in ipairs(conds) do run_block(c, false) end
  for _ = 1, rounds do
    for i = 1, #conds do run_block(conds[i], true, 1) end
    for i = #conds, 1, -1 do run_block(conds[i], true, 2) end
  end
  return res
end

local function describe_cond(r, base, key)
  key = key or "walls"
  local m = median(r[key])
  local text = fmt("median %s, mean %s (n=%d)", us(m), us(mean(r[key])), #r[key])
  if base then
    local add = m - median(base[key])
    text = text .. fmt("; added %s, ratio %.4f", sus(add), m / median(base[key]))
  end
  if #r.probe > 0 then
    text = text .. fmt("; probe_ns mean %s (%.2f %% of wall)", us(mean(r.probe)),
      100 * mean(r.probe) / mean(r.walls))
  end
  return text
end

-- Enabled-minus-disabled cost of the probe's Lua entry points, best of 3
-- loops of N calls each (no GPU involved).
local function entry_costs()
  local N = 20000
  local phase = pp.phase
  local function best(f)
    local b
    for _ = 1, 3 do
      local t0 = pp.now()
      f()
      local per = (pp.now() - t0) / N
      b = b and math.min(b, per) or per
    end
    return b
  end
  local function scopes() for _ = 1, N do local _ <close> = phase("prepare") end end
  local function bfe() for _ = 1, N do pp.begin(); pp.finish(); local _ = pp.emit() end end
  pp.disable()
  local scope_off, bfe_off = best(scopes), best(bfe)
  pp.enable()
  pp.begin()
  local scope_on = best(scopes)
  pp.emit()
  local bfe_on = best(bfe)
  pp.disable()
  return scope_on, scope_off, bfe_on, bfe_off
end

local cupti_runs = false -- set by part 4: collection started here

local function part4()
  local buf = ctx:alloc(4096)
  local data = string.rep("\0", 4096)
  local args = { KERNEL4_NS, 0, 0 }
  local function mode_run(mode) return function() return synthetic(mode, buf, data, args) end end
  local conds = {
    { name = "A", setup = pp.disable, run = mode_run("off") },
    { name = "B", setup = pp.enable, run = mode_run("host") },
    { name = "C", setup = pp.enable, run = mode_run("event") },
  }
  local cupti_why4 = cupti_why
  if cupti_ok then
    local started
    started, cupti_why4 = ctx:kernel_source("cupti")
    if started then -- one trial window: does CUPTI deliver here?
      local win, ker = s:timed{ fn = spin, grid = 1, block = 32, args = { KERNEL4_NS, 0, 0 } }
      ctx:kernel_source("event")
      cupti_runs = win ~= nil
      cupti_why4 = ker
    end
    if cupti_runs then
      local function cupti_on() pp.enable(); assert(ctx:kernel_source("cupti")) end
      local function cupti_off() ctx:kernel_source("event") end
      conds[4] = { name = "D", setup = cupti_on, teardown = cupti_off, run = mode_run("cupti") }
      -- G: CUPTI collecting (its activity kind and launch callback on) while
      -- the dispatch opens no window: what CUPTI itself costs, apart from
      -- the source's spans.
      conds[5] = { name = "G", setup = cupti_on, teardown = cupti_off, run = mode_run("host") }
    end
  end
  local res = interleave(conds, ROUNDS4, BLOCK4)
  pp.disable()
  buf:free()
  local A, B, C, D, G = res.A, res.B, res.C, res.D, res.G
  local noise = median(A.halves[2]) - median(A.halves[1])
  say("synthetic dispatch: host phases %s us of fixed work, 4 KiB upload, one %d us spin kernel, "
    .. "stream sync, 4 KiB download; records emitted with the line sink and the store off",
    fmt("%g", (HOST.prepare + HOST.ptx + HOST.modkey + HOST.resolve + HOST.lease) / 1000), KERNEL4_NS // 1000)
  row("4", "A probe disabled, whole dispatch", describe_cond(A) .. fmt("; A-vs-A noise %s", sus(noise)),
    "", "", "info")
  row("4", "A probe disabled, begin..phases end", describe_cond(A, nil, "inwall"), "", "", "info")
  local mBi = median(B.inwall) / median(A.inwall) - 1
  row("4", "B enabled, no events: wall (begin..phases end)", describe_cond(B, A, "inwall"),
    "adds <= 1 % to A", fmt("%+.3f %%", 100 * (HOST_MAX - mBi)), mBi <= HOST_MAX and "PASS" or "MISS")
  local mB = median(B.walls) / median(A.walls) - 1
  row("4", "B enabled, no events: whole dispatch (+ finish, emit)", describe_cond(B, A),
    "adds <= 2 % to A", fmt("%+.3f %%", 100 * (WHOLE_MAX - mB)), mB <= WHOLE_MAX and "PASS" or "MISS")
  row("4", "C enabled, event window", describe_cond(C, A), "", "", "info")
  row("4", "cost: event window per dispatch", fmt("C - B = %s", sus(median(C.walls) - median(B.walls))),
    "stated in us", "", "STATED")
  if D then
    row("4", "D enabled, CUPTI timeline source", describe_cond(D, A), "", "", "info")
    local dB = median(D.walls) - median(B.walls)
    row("4", "cost: CUPTI source per dispatch", fmt("D - B = %s (D - C = %s: CUPTI against the event window)",
      sus(dB), sus(median(D.walls) - median(C.walls))), "D - B <= 2 us",
      sus(CUPTI_COST_MAX - dB), dB <= CUPTI_COST_MAX and "PASS" or "MISS")
    row("4", "cost: CUPTI collecting, no window (its kinds and callback)",
      fmt("G - B = %s; the source's windows and spans over that, D - G = %s",
        sus(median(G.walls) - median(B.walls)), sus(median(D.walls) - median(G.walls))), "", "", "info")
  else
    row("4", "cost: CUPTI source per dispatch", "not measured: " .. tostring(cupti_why4),
      "stated in us", "", "MISS")
  end
  local ctl = interleave({
    { name = "E", setup = pp.disable, run = mode_run("spins") },
    { name = "F", setup = pp.enable, run = mode_run("spins") },
  }, ROUNDS4, BLOCK4)
  pp.disable()
  row("4", "control: the same probe calls around spins only (no CUDA call)",
    fmt("F enabled against E disabled: %s; whole dispatch (B - A) %s",
      describe_cond(ctl.F, ctl.E), sus(median(B.walls) - median(A.walls))), "", "", "info")
  local scope_on, scope_off, bfe_on, bfe_off = entry_costs()
  row("4", "probe entry points (host loop, this run)",
    fmt("scope enabled %.0f ns vs disabled %.0f ns; begin+finish+emit enabled %.0f ns vs disabled %.0f ns; "
      .. "9 scopes + one emit predict %s added", scope_on, scope_off, bfe_on, bfe_off,
      sus(9 * (scope_on - scope_off) + bfe_on - bfe_off)), "", "", "info")
  row("4", "probe_ns against measured cost",
    fmt("B: probe_ns %s vs measured in-wall added %s; C: probe_ns %s vs C-B %s (event window)%s",
      us(mean(B.probe)), sus(median(B.inwall) - median(A.inwall)), us(mean(C.probe)),
      sus(median(C.walls) - median(B.walls)),
      D and fmt("; D: probe_ns %s vs D-B %s (CUPTI source)", us(mean(D.probe)),
        sus(median(D.walls) - median(B.walls))) or ""),
    "", "", "info")
end

-- 4b: the reference dispatcher, when this tree has it (after part 4, which
-- finds out whether CUPTI collection starts here).
local function part4b()
  local okD, D = pcall(require, "phaseprobe.dispatch")
  local okP, P = pcall(require, "phaseprobe.dispatch.program")
  if not (okD and okP) then
    row("4b", "reference dispatcher", "not run: phaseprobe.dispatch is not installed in this tree", "", "", "info")
    return
  end
  local done, err = pcall(function()
    local dev = assert(D.cuda_device(0))
    local d = D.new{ device = dev }
    local prog = P.generate{ nodes = 500 }
    local n = 4096
    local a = { n = n, inputs = P.inputs(prog, n) }
    local run = function() return d:dispatch(prog, a).record end
    pp.enable()
    for _ = 1, 3 do run() end -- JIT, caches
    local conds = {
      { name = "A", setup = pp.disable, run = run },
      { name = "B", setup = pp.enable, run = run },
    }
    if cupti_runs then
      conds[3] = { name = "D", setup = function() pp.enable(); assert(dev.ctx:kernel_source("cupti")) end,
        teardown = function() dev.ctx:kernel_source("event") end, run = run }
    end
    local res = interleave(conds, 4, 10)
    pp.disable()
    row("4b", "dispatcher, probe disabled (its window always recorded)", describe_cond(res.A), "", "", "info")
    local mB = median(res.B.walls) / median(res.A.walls) - 1
    row("4b", "dispatcher, probe enabled", describe_cond(res.B, res.A), "adds <= 1 % to disabled",
      fmt("%+.3f %%", 100 * (HOST_MAX - mB)), mB <= HOST_MAX and "PASS" or "MISS")
    if res.D then
      local share = (median(res.D.walls) - median(res.B.walls)) / median(res.A.walls)
      row("4b", "dispatcher, enabled + CUPTI source", describe_cond(res.D, res.A)
        .. fmt("; CUPTI over enabled %s", sus(median(res.D.walls) - median(res.B.walls))),
        "CUPTI adds <= 1 % of the disabled wall", fmt("%+.3f %%", 100 * (HOST_MAX - share)),
        share <= HOST_MAX and "PASS" or "MISS")
    end
    d:close()
  end)
  if not done then
    pp.disable()
    row("4b", "reference dispatcher", "failed: " .. tostring(err), "runs", "", "MISS")
  end
end

-- ---- part 3: drift ---------------------------------------------------------------------
local function drift_row(label, a, b, nominal_s)
  local df, dm = b[1] - a[1], b[2] - a[2]
  local drift = (df - dm) / dm
  local unc = (a[3] + b[3]) / 2 / dm -- bracket widths, as a fraction
  check("3", fmt("%s window (%.3f s measured)", label, dm / 1e9),
    fmt("%s: %+.1f ppm (%+.5f %%), pp.now %+.0f ns vs monotonic; read uncertainty %.2f ppm",
      clk.name, drift * 1e6, drift * 100, df - dm, unc * 1e6),
    math.abs(drift), DRIFT_MAX, function(m) return fmt("%+.5f %%", m * 100) end,
    fmt("|drift| <= 0.05 %% over %g s", nominal_s))
end

-- ---- run -------------------------------------------------------------------------------
local done, err = pcall(function()
  part2()
  part2c()
  sleep_until(t_start + 1000000000)
  local one = { truth.clock_pair() }
  part1()
  part4()
  part4b()
  sleep_until(t_start + math.floor(LONG_S * 1e9))
  local long = { truth.clock_pair() }
  drift_row("1 s", long0, one, 1)
  drift_row(fmt("%g s", LONG_S), long0, long, LONG_S)
end)
if not done then
  pp.disable()
  row("-", "harness", "stopped: " .. tostring(err), "", "", "MISS")
end
local info = cu.cupti_info()
if info.records > 0 then
  say("CUPTI records read %d, kernels %d, matched %d, lost %d, dropped %d, buffers %d; "
    .. "spans %d (refused %d), records completed after their emit %d, given up %d; "
    .. "flusher flushes %d, forced flushes %d; the table lock held at a span's start or a launch call %d times, "
    .. "%s waited in all",
    info.records, info.kernels, info.matched, info.lost, info.dropped, info.buffers,
    info.spans, info.spans_refused, info.deferred, info.incomplete, info.flushes, info.forced_flushes,
    info.lock_waits, us(info.lock_wait_ns))
end
say("")
render()
say("")
say("targets: %d PASS, %d MISS (wall %.1f s)", counts.PASS, counts.MISS,
  (truth.monotonic_ns() - t_start) / 1e9)
ctx:close()
finish(done and 0 or 1)
