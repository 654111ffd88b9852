-- Kernel-time sources, event calibration and the truth helpers, without a
-- GPU. The CUPTI source must report why it is unavailable and leave
-- everything else working. The window plumbing (source selection, the
-- calibrated floor reaching windows and records) runs against the
-- fault-injecting fake driver (build/libfakecuda.so): that checks the
-- binding's logic only, never that anything works on a GPU
-- (spec/truth_gpu_spec.lua does, on one).
local pp = require "phaseprobe"
local shell = require "helpers.shell"
local probe = require "helpers.probe"
local cu = pp.cuda

local FAKE = "build/libfakecuda.so"

local exists = require("helpers.files").exists

-- Runs `code` in a fresh interpreter (libraries load once per process) with
-- `env` ("NAME=value ..."); returns its stdout and whether it exited 0.
local function run(env, code)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write('package.cpath = "./?.so;" .. package.cpath\n', code)
  f:close()
  local ok, out = shell.run(env .. " lua5.4 " .. path .. " 2>&1")
  os.remove(path)
  return out, ok
end

-- run with the fake driver reporting each launch to the fake CUPTI as the
-- real driver does (FAKECUDA_TRACE: a 20 us kernel starting 7 us after the
-- call), code given pp, cu, a context whose kernel times come from CUPTI
-- (ctx), a stream of it (s) and the spin kernel (spin).
local function run_traced(code)
  return run("PHASEPROBE_LIBCUDA=" .. FAKE .. " PHASEPROBE_LIBCUPTI=build/libfakecupti.so "
    .. "FAKECUDA_TRACE=1", [[
local pp = require "phaseprobe"
local cu = pp.cuda
local ctx = assert(cu.context(0))
assert(ctx:kernel_source("cupti") == "cupti")
local s = ctx:stream()
local spin = ctx:load_file("examples/kernels/spin.ptx"):func("spin")
]] .. code)
end

-- A real driver on this machine would let CUPTI attach, which the fake
-- cases below assume it cannot.
local real_driver = cu.built_with_cuda and cu.available()

-- Whether no CUDA driver is installed; where one is, the spec is pending
-- (the #gpu spec covers it there).
local function without_driver()
  if real_driver then pending("a CUDA driver is installed here: covered by the #gpu spec") end
  return not real_driver
end

describe("the CUPTI source without a GPU", function()
  it("says whether it was built with the CUPTI headers", function()
    assert.is_boolean(cu.built_with_cupti)
    if not cu.built_with_cuda then
      assert.is_false(cu.built_with_cupti)
    end
  end)

  it("cupti_available returns true, or false with a reason", function()
    local ok, why = probe.answer(20, cu.cupti_available())
    if ok then
      local info = cu.cupti_info()
      assert.is_true(#info.path > 0)
      assert.is_true(info.version >= 13)
    else
      assert.are.equal(why, cu.cupti_info().why)
    end
  end)

  it("names the missing driver when there is none", function()
    if not without_driver() then return end
    local ok, why = cu.cupti_available()
    assert.is_false(ok)
    if cu.built_with_cupti then
      local _, cwhy = cu.available()
      assert.truthy(why:find("needs the CUDA driver", 1, true), why)
      assert.truthy(why:find(cwhy, 1, true), why)
    else
      assert.truthy(why:find("without the CUPTI headers", 1, true), why)
    end
  end)

  it("names PHASEPROBE_LIBCUPTI when that library cannot be loaded", function()
    local out, ok = run("PHASEPROBE_LIBCUPTI=/nonexistent/libcupti.so", [[
      local cu = require("phaseprobe").cuda
      local ok, why = cu.cupti_available()
      print(tostring(ok) .. "|" .. why .. "|" .. cu.cupti_info().path)
    ]])
    assert.is_true(ok, out)
    if cu.built_with_cupti then
      assert.truthy(out:find("^false|PHASEPROBE_LIBCUPTI=/nonexistent/libcupti.so could not be loaded"), out)
      assert.truthy(out:find("|\n$"), out) -- no library path
    else
      assert.truthy(out:find("^false|.*without the CUPTI headers"), out)
    end
  end)

  it("cupti_start fails with the reason, and nothing else changes", function()
    if not without_driver() then return end
    local ok, why = cu.cupti_start()
    assert.is_nil(ok)
    assert.is_string(why)
    assert.is_true(#why > 10)
    cu.cupti_stop() -- unbalanced: ignored
    cu.cupti_stop()
    local info = cu.cupti_info()
    assert.is_false(info.active)
    assert.are.equal(0, info.starts)
    assert.are.equal(0, info.spans)
    -- the probe records as before
    pp.use(pp.default_schema())
    pp.enable()
    pp.sink("none")
    pp.begin()
    pp.add_ns("prepare", 5)
    local r = pp.emit()
    assert.are.equal(5, r.prepare_ns)
    assert.are.equal("none", r.kernel_src)
  end)

  it("cupti_flush_ms sets how often records are collected, 1 to 1000 ms", function()
    if not cu.built_with_cupti then
      assert.are.equal(0, cu.cupti_flush_ms()) -- no flusher to set
      return
    end
    local was = cu.cupti_flush_ms()
    assert.are.equal(10, was)
    assert.are.equal(50, cu.cupti_flush_ms(50))
    assert.are.equal(50, cu.cupti_info().flush_ms)
    for _, bad in ipairs { 0, 1001, -5 } do
      assert.has_error(function() cu.cupti_flush_ms(bad) end, "bad argument #1 to 'cupti_flush_ms' (milliseconds must be 1..1000)")
    end
    assert.has_error(function() cu.cupti_flush_ms(2.5) end)
    assert.are.equal(50, cu.cupti_flush_ms(), "a refused value changes nothing")
    assert.are.equal(was, cu.cupti_flush_ms(was))
  end)
end)

describe("the CUPTI matching logic, against a scripted fake CUPTI", function()
  local HELPER, FAKE_CUPTI = "build/cupti_helper", "build/libfakecupti.so"

  local function need_helper()
    if not cu.built_with_cupti then
      pending("built without the CUPTI headers: no CUPTI source to drive")
      return false
    end
    if not (exists(HELPER) and exists(FAKE_CUPTI)) then
      error(HELPER .. " or " .. FAKE_CUPTI .. " is missing: run make first")
    end
    return true
  end

  it("times, splits, completes records, gives up and counts as specified", function()
    if not need_helper() then return end
    local ok, out = shell.run(HELPER .. " " .. FAKE_CUPTI .. " 2>&1")
    assert.is_true(ok, out)
    local n = 0
    for line in out:gmatch("[^\n]+") do
      assert.truthy(line:find("^ok "), out)
      n = n + 1
    end
    assert.are.equal(17, n, out)
  end)

  it("starts spans on fresh slots without a page fault #novalgrind", function()
    if not need_helper() then return end
    local ok, out = shell.run(HELPER .. " " .. FAKE_CUPTI .. " faults 2>&1")
    assert.is_true(ok, out)
    assert.truthy(out:find("^ok starts spans without a page fault"), out)
  end)

  -- What the helper prints when the fake CUPTI refuses its start (mode).
  local function refused(mode)
    local _, out = shell.run(HELPER .. " " .. FAKE_CUPTI .. " " .. mode)
    return out
  end

  it("reports a refused start with CUPTI's error name", function()
    if not need_helper() then return end
    local out = refused("fail_enable")
    assert.are.equal("start=-1 active=0 why=cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL): "
      .. "CUPTI_ERROR_NOT_INITIALIZED (15)\n", out)
  end)

  it("says so when another CUPTI client holds the callbacks", function()
    if not need_helper() then return end
    local out = refused("fail_subscribe")
    assert.matches("^start=%-1 active=0 why=cuptiSubscribe: another CUPTI client", out)
  end)
end)

describe("the truth harness's helpers (phaseprobe_truth)", function()
  local saved = package.cpath
  package.cpath = "./build/?.so;" .. package.cpath
  local truth = require "phaseprobe_truth"
  package.cpath = saved

  it("are not in the shipped module", function()
    assert.is_nil(rawget(pp, "truth"))
  end)

  it("reads the monotonic clock", function()
    local a = truth.monotonic_ns()
    truth.sleep_ns(2000000)
    local b = truth.monotonic_ns()
    assert.is_true(math.type(a) == "integer" and b - a >= 2000000, b - a)
  end)

  it("pairs the probe clock with the monotonic clock", function()
    local f0, m0, s0 = truth.clock_pair()
    truth.spin_ns(3000000)
    local f1, m1, s1 = truth.clock_pair()
    for _, v in ipairs { f0, m0, s0, f1, m1, s1 } do
      assert.are.equal("integer", math.type(v))
    end
    assert.is_true(s0 >= 0 and s1 >= 0)
    -- both clocks moved by at least the spin (lower bounds only)
    assert.is_true(m1 - m0 >= 3000000, m1 - m0)
    assert.is_true(f1 - f0 >= 2900000, f1 - f0) -- the spin reads the probe clock
  end)

  it("rejects bad arguments, naming them", function()
    assert.has_error(function() truth.spin_ns(-1) end,
      "bad argument #1 to 'spin_ns' (nanoseconds must be 0..60e9)")
    assert.has_error(function() truth.sleep_ns("soon") end)
    assert.has_error(function() truth.sleep_ns(-5) end,
      "bad argument #1 to 'sleep_ns' (nanoseconds must be 0..3600e9)")
  end)
end)

describe("source selection and calibration through the fake driver", function()
  local function fake(code, env)
    local out, ok = run("PHASEPROBE_LIBCUDA=" .. FAKE .. " " .. (env or ""), [[
      local pp = require "phaseprobe"
      local cu = pp.cuda
      local ctx = assert(cu.context(0))
      local spin = ctx:load_file("examples/kernels/spin.ptx"):func("spin")
      local s = ctx:stream()
      local function check(cond, msg) if not cond then error(msg, 2) end end
      local function raises(pattern, f, ...)
        local ok, err = pcall(f, ...)
        check(not ok, "no error, expected " .. pattern)
        check(tostring(err):find(pattern, 1, true), "error '" .. tostring(err) .. "' lacks '" .. pattern .. "'")
      end
    ]] .. code .. "\nprint('done')\n")
    assert.is_true(ok and out:find("done\n$") ~= nil, out)
    return out
  end

  local function need_fake()
    if not cu.built_with_cuda then
      pending("built without the CUDA headers: no CUDA layer to drive")
      return false
    end
    if not exists(FAKE) then
      error(FAKE .. " is missing: run make first")
    end
    return true
  end

  -- need_fake, and a build with the CUPTI headers (else pending)
  local function need_fake_cupti()
    if not need_fake() then return false end
    if not cu.built_with_cupti then
      pending("built without the CUPTI headers")
      return false
    end
    return true
  end

  it("calibrate_events sets the floor that windows and records report", function()
    if not need_fake() then return end
    fake [[
      local floor, cal = ctx:calibrate_events{samples = 20}
      check(math.type(floor) == "integer" and floor > 0, "floor " .. tostring(floor))
      check(cal.method == "event", "method " .. tostring(cal.method))
      check(cal.samples == 20, "samples")
      check(cal.floor_ns == floor and cal.event_median_ns == floor, "floor is the median pair")
      check(cal.event_min_ns <= cal.event_median_ns and cal.event_median_ns <= cal.event_p90_ns
        and cal.event_p90_ns <= cal.event_max_ns, "quantiles in order")
      check(cal.cupti_median_ns == nil, "no CUPTI figures for the event method")
      check(ctx.event_floor_ns == floor, "context floor")
      pp.enable(); pp.sink("none")
      pp.begin()
      local w = s:window()
      check(w.floor_ns == floor, "window floor")
      check(w.source == "event", "default source")
      w:launch_loop{fn = spin, grid = 1, block = 32, args = {1000, 0, 0}, iterations = 2}
      w:close()
      check(w.kernel_src == nil and w.event_kernel_ns == nil, "nothing before collect")
      local win, ker = w:collect()
      pp.finish()
      local r = pp.emit()
      check(w.kernel_src == "event", "window kernel_src")
      check(w.event_kernel_ns == ker, "event reading")
      local cal_ns = ker > floor and ker - floor or 0
      check(w.kernel_calibrated_ns == cal_ns, "calibrated = kernel - floor")
      check(w.cupti_kernel_ns == nil and w.cupti_why == nil, "no CUPTI asked for")
      check(r.kernel_src == "event" and r.kernel_ns == ker, "record kernel")
      check(r.kernel_floor_ns == floor, "record floor " .. r.kernel_floor_ns)
      check(r.device_window_ns == win, "record window")
      check(r.probe_ns >= w.probe_ns and w.probe_ns > 0, "probe cost of the events")
    ]]
  end)

  it("calibrate_events rejects bad options and open dispatches", function()
    if not need_fake() then return end
    fake [[
      raises("field 'samples' must be an integer in 1..100000, got 0",
        ctx.calibrate_events, ctx, {samples = 0})
      raises("unknown field 'bogus' (fields: samples, source)",
        ctx.calibrate_events, ctx, {bogus = 1})
      raises("field 'source' must be \"auto\", \"event\" or \"cupti\", got ev",
        ctx.calibrate_events, ctx, {source = "ev"})
      pp.enable(); pp.sink("none")
      pp.begin()
      raises("a dispatch is open on this thread", ctx.calibrate_events, ctx, {samples = 3})
      pp.emit()
      local before = ctx.event_floor_ns
      ctx:close()
      raises("closed context", ctx.calibrate_events, ctx)
      check(before > 0, "floor kept")
    ]]
  end)

  it("the cupti source refuses clearly when CUPTI cannot run, and the window goes on", function()
    if not need_fake() then return end
    if real_driver then
      pending("a CUDA driver is installed here: CUPTI might attach to it")
      return
    end
    fake [[
      local ok, why = ctx:kernel_source("cupti")
      check(ok == nil and type(why) == "string" and #why > 10, "kernel_source cupti: " .. tostring(why))
      check(ctx:kernel_source() == "event", "still event")
      raises("(invalid option 'nope'; valid: ", ctx.kernel_source, ctx, "nope")
      local ok2, why2 = ctx:calibrate_events{samples = 3, source = "cupti"}
      check(ok2 == nil and why2 == why, "calibrate with cupti: " .. tostring(why2))
      local floor = ctx:calibrate_events{samples = 3, source = "auto"}
      check(floor > 0, "auto falls back to the pair")
      local w = s:window()
      raises("source 'cupti' needs CUPTI collection on", w.launch_loop, w,
        {fn = spin, grid = 1, block = 32, args = {1000, 0, 0}, source = "cupti"})
      raises("field 'source' must be \"event\" or \"cupti\", got x", w.launch_loop, w,
        {fn = spin, grid = 1, block = 32, args = {1000, 0, 0}, source = "x"})
      check(w.source == "event", "a refused source leaves the window's")
      w:launch_loop{fn = spin, grid = 1, block = 32, args = {1000, 0, 0}}
      w:close()
      local _, ker = w:collect()
      check(ker > 0 and w.kernel_src == "event", "event reading")
      raises("source 'cupti' needs CUPTI collection on", s.timed, s,
        {fn = spin, grid = 1, block = 32, args = {1000, 0, 0}, source = "cupti"})
      local _, k2 = s:timed{fn = spin, grid = 1, block = 32, args = {1000, 0, 0}, source = "event"}
      check(k2 > 0, "timed with the event source")
      check(cu.cupti_info().starts == 0, "nothing left started")
      ctx:kernel_source("event")
      ctx:close()
    ]]
  end)

  it("completes dispatches' records from CUPTI's launches, also at an exit without closing Lua", function()
    if not need_fake_cupti() then return end
    local log = os.tmpname()
    local out, ok = run_traced(([[
      pp.enable(); assert(pp.sink(%q))
      for i = 1, 30 do
        pp.begin()
        local w = s:window()
        w:launch_loop{ fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 }, iterations = 2 }
        w:close(); pp.finish(); w:collect()
        local r = pp.emit{ seq = i }
        assert(r.kernel_src == "pending" or r.kernel_src == "cupti", r.kernel_src)
      end
      print("emitted")
      os.exit(0) -- no lua_close: collection is still on at exit
    ]]):format(log))
    assert.is_true(ok, out)
    local lines = {}
    for l in io.lines(log) do lines[#lines + 1] = l end
    os.remove(log)
    assert.are.equal(30, #lines, out)
    for _, l in ipairs(lines) do
      assert.truthy(l:find(" kernel_ns=40000 ", 1, true), l)
      assert.truthy(l:find(" kernel_src=cupti kernel_floor_ns=0 kernels=2 ", 1, true), l)
    end
  end)

  -- A launch loop that fails (a bad launch configuration, as an autotuner
  -- tries) left its span open with nobody to close it: 256 such loops took
  -- every slot for good, and each later window got no timeline.
  it("frees the span of a launch loop that failed", function()
    if not need_fake_cupti() then return end
    local out, ok = run_traced([[
      pp.enable(); pp.sink("none")
      for _ = 1, 300 do
        local ran, why = pcall(s.timed, s, { fn = spin, grid = 1, block = 2048, args = { 1000, 0, 0 } })
        assert(not ran and tostring(why):find("INVALID"), tostring(why))
      end
      local w = s:window()
      for _ = 1, 3 do -- tried again in one window
        assert(not pcall(w.launch_loop, w, { fn = spin, grid = 1, block = 2048, args = { 1000, 0, 0 } }))
      end
      w:launch_loop{ fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 } }
      w:close(); w:collect()
      assert(w:wait(2000))
      w = nil; collectgarbage(); collectgarbage() -- its kept span goes with it
      assert(pp.flush(5000))
      local _, ker = s:timed{ fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 } }
      local info = cu.cupti_info()
      print(("pending %d refused %d kernel %s"):format(info.pending, info.spans_refused, tostring(ker)))
    ]])
    assert.is_true(ok, out)
    assert.truthy(out:find("pending 0 refused 0 kernel 20000", 1, true), out)
  end)

  it("s:timed read by CUPTI returns the host's stamps beside the timeline, its host gap between them", function()
    if not need_fake() then return end
    if not cu.built_with_cupti then
      pending("built without the CUPTI headers")
      return
    end
    local out, ok = run_traced([[
      for _ = 1, 3 do
        local _, ker, t = s:timed{ fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 }, spin_us = 200 }
        assert(ker == 20000 and t and t.kernels == 1, "timeline: " .. tostring(ker))
        local h = t.host_ns
        assert(#h == 6, "six stamps, got " .. #h)
        assert(h[1] <= h[5] and h[5] < h[6] and h[6] <= h[2] and h[2] <= h[3] and h[3] <= h[4],
          "open, gap, loop start, loop end, close in order")
        assert(h[6] - h[5] >= 200000, "the gap spun: " .. (h[6] - h[5]))
        -- the launch callback came between the loop's start and its end
        local tail = math.max(0, (h[4] - h[1]) - (t.last_end_ns or 0))
        assert(t.host_gap_ns >= h[2] - h[1] and t.host_gap_ns <= h[3] - h[1] + tail,
          ("host gap %d outside [%d, %d]"):format(t.host_gap_ns, h[2] - h[1], h[3] - h[1] + tail))
      end
      local _, _, t2 = s:timed{ fn = spin, grid = 1, block = 32, args = { 1000, 0, 0 } }
      assert(#t2.host_ns == 4, "no gap spun: four stamps")
      print("timed ok")
    ]])
    assert.is_true(ok, out)
    assert.truthy(out:find("timed ok", 1, true), out)
  end)

  it("says why a window read by CUPTI has no kernel time when CUPTI delivers nothing", function()
    if not need_fake_cupti() then return end
    -- The scripted fake CUPTI starts, but hears of no launch of the fake
    -- driver: every CUPTI reading finds nothing.
    fake([[
      check(ctx:kernel_source("cupti") == "cupti", "kernel_source")
      check(cu.cupti_info().active and cu.cupti_info().starts == 1, "collection on")
      local floor, cal = ctx:calibrate_events{samples = 5}
      check(cal.method == "event" and cal.why:find("CUPTI saw none of the launch calls", 1, true),
        "calibration: " .. tostring(cal.why))
      check(cal.points == nil, "no points without CUPTI's readings")
      pp.enable(); pp.sink("none"); pp.store.clear()
      pp.begin()
      local w = s:window()
      check(w.source == "cupti", "window source from the context")
      w:launch_loop{fn = spin, grid = 1, block = 32, args = {1000, 0, 0}}
      w:close()
      local dw, ker = w:collect()
      check(dw == nil and ker == nil, "a window without events has nothing to read at collect")
      pp.finish()
      local r = pp.emit()
      -- CUPTI saw no launch call of the fake driver: nothing to wait for
      check(r.kernel_src == "none" and r.kernel_ns == 0 and r.kernels == nil,
        "the record says it has no kernel time: " .. tostring(r))
      check(pp.flush(200) == true, "flush")
      local stored = pp.store.get(pp.store.count())
      check(stored.kernel_src == "none", "stored: " .. tostring(stored))
      check(cu.cupti_info().pending == 0, "nothing left waiting")
      local ok, why = w:wait(20)
      check(ok == nil and type(why) == "string", "wait after the record went: " .. tostring(why))
      -- the event pair beside CUPTI: a window asked for it
      local w2 = s:window{source = "event"}
      check(w2.source == "event", "event window")
      w2:launch_loop{fn = spin, grid = 1, block = 32, args = {1000, 0, 0}}
      w2:close()
      local dw2, k2 = w2:collect()
      check(dw2 > 0 and k2 > 0 and w2.kernel_src == "event", "event window reads the pair")
      local w3 = s:window()
      raises("this window records no events", w3.launch_loop, w3,
        {fn = spin, grid = 1, block = 32, args = {1000, 0, 0}, source = "event"})
      w3:discard()
      ctx:kernel_source("event")
      check(not cu.cupti_info().active, "kernel_source event stops collection")
      check(ctx:kernel_source("cupti") == "cupti", "again")
      w, w2, w3 = nil, nil, nil
      s:close()
      spin = nil
      ctx:close() -- released once its children are gone too
      collectgarbage()
      collectgarbage()
      check(cu.cupti_info().starts == 0, "releasing the context gives its start back")
    ]], "PHASEPROBE_LIBCUPTI=build/libfakecupti.so")
  end)
end)
