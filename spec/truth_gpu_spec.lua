-- CUPTI's device timeline and the event calibration on a real GPU (tag #gpu;
-- make test-gpu). Without a driver or CUPTI every case fails with the
-- reason: these are the checks that say the source works. Behaviour only:
-- how close the figures come to each other is `make truth`'s to report.
local pp = require "phaseprobe"
local cu = pp.cuda

local SPIN_NS = 200000 -- each spin kernel waits 200 us of %globaltimer

-- How far a device stamp converted by CUPTI to the probe clock may lie
-- past a host reading taken after the event it stamps (see its use).
local CONVERSION_NS = 10000

describe("CUPTI's device timeline #gpu #cupti", function()
  local ctx, s, spin, cal

  local function spin_args(ns, iterations)
    return { fn = spin, grid = 1, block = 32, args = { ns, 0, 0 }, iterations = iterations }
  end

  -- One dispatch around a window of `iterations` spin kernels, with a
  -- stream synchronize before its end as a dispatcher's release does.
  local function dispatch(iterations, opts)
    opts = opts or {}
    pp.begin()
    local w = s:window(opts.window)
    w:launch_loop(spin_args(SPIN_NS, iterations))
    w:close()
    s:synchronize()
    pp.finish()
    local win, ker = w:collect()
    if opts.wait then win, ker = w:wait() end
    local r = pp.emit()
    return r, w, win, ker
  end

  local function last_stored()
    return pp.store.get(pp.store.count())
  end

  lazy_setup(function()
    local ok, why = cu.available()
    assert(ok, "pp.cuda is not available: " .. tostring(why))
    ok, why = cu.cupti_available()
    assert(ok, "CUPTI is not available: " .. tostring(why))
    ctx = assert(cu.context(0))
    s = ctx:stream()
    spin = ctx:load_file("examples/kernels/spin.ptx"):func("spin")
    pp.enable()
    pp.sink("none")
    pp.store.enable(true)
    pp.store.clear()
    assert.are.equal("cupti", ctx:kernel_source("cupti"))
    for _ = 1, 3 do dispatch(1) end -- first launches (module, CUPTI buffers)
    assert.is_true(pp.flush(2000))
  end)

  lazy_teardown(function()
    if ctx then
      ctx:kernel_source("event")
      ctx:close()
    end
    pp.store.clear()
  end)

  it("starts collection for the context, and pins the probe clock #gpu", function()
    local info = cu.cupti_info()
    assert.is_true(info.active)
    assert.is_true(info.starts >= 1)
    assert.is_true(info.version >= 13)
    local ok, err = pp.select_clock(pp.clock().name)
    assert.is_nil(ok)
    assert.is_string(err)
  end)

  it("completes a dispatch's record after its emit, on the probe clock #gpu", function()
    local r, w, win, ker = dispatch(1)
    assert.is_nil(win, "a window without events has nothing to read at collect")
    assert.is_nil(ker)
    assert.is_true(r.kernel_src == "pending" or r.kernel_src == "cupti", r.kernel_src)
    assert.is_true(pp.flush(2000))
    local got = last_stored()
    assert.are.equal(r.seq, got.seq)
    assert.are.equal("cupti", got.kernel_src, tostring(got))
    assert.are.equal(1, got.kernels)
    assert.is_true(got.kernel_ns >= SPIN_NS - 1000, "kernel_ns " .. got.kernel_ns)
    assert.is_true(got.kernel_ns < SPIN_NS + 200000, "kernel_ns " .. got.kernel_ns)
    -- one axis: the launch call, then the kernel, inside the dispatch
    assert.is_true(got.launch_at_ns > 0, tostring(got))
    assert.is_true(got.kernel_first_ns > got.launch_at_ns, tostring(got))
    assert.is_true(got.kernel_last_ns > got.kernel_first_ns, tostring(got))
    -- CUPTI converts the device's stamps to the probe clock; one run in 41
    -- read the kernel's end 0.34 us after the host saw the synchronize
    -- return (which takes longer than that to notice the end), so the
    -- order is checked to within 10 us of that conversion
    assert.is_true(got.kernel_last_ns <= got.wall_ns + CONVERSION_NS,
      "the kernel ended before the dispatch (it synchronized): " .. tostring(got))
    assert.are.equal(got.kernel_last_ns - got.kernel_first_ns, got.kernel_ns)
    -- the device's idle time in the window is the host's gap plus latency
    assert.is_true(got.launch_latency_ns > 0)
    assert.are.equal(got.device_window_ns - got.kernel_ns, got.launch_latency_ns + got.host_gap_ns)
    assert.are.equal(0, got.kernel_floor_ns)
    assert.is_true(w.probe_ns > 0)
  end)

  it("w:wait() reads the timeline now, and the dispatch takes it at once #gpu", function()
    local r, w, win, ker = dispatch(4, { wait = true })
    assert.are.equal("cupti", r.kernel_src)
    assert.are.equal(4, r.kernels)
    assert.are.equal(ker, r.kernel_ns)
    assert.are.equal(win, r.device_window_ns)
    assert.is_true(r.kernel_ns >= 4 * (SPIN_NS - 1000), "sum " .. r.kernel_ns)
    local t = w.timeline
    assert.are.equal(4, t.kernels)
    assert.is_true(t.kernel_first_ns > t.launch_at_ns)
    assert.are.equal(t.window_ns - t.kernel_ns, t.launch_latency_ns + t.host_gap_ns)
  end)

  it("calibrates the event pair against CUPTI, by kernel length #gpu", function()
    local f, c = ctx:calibrate_events{ samples = 60 }
    assert.are.equal("cupti", c.method, c.why)
    assert.is_true(f > 0, "floor " .. f)
    assert.is_true(c.cupti_median_ns > 0)
    assert.are.equal(f, ctx.event_floor_ns)
    assert.is_true(#c.points >= 3, "points " .. #c.points)
    for i, p in ipairs(c.points) do
      assert.is_true(p.pair_ns > p.floor_ns and p.error_ns >= 0, "point " .. i)
      if i > 1 then assert.is_true(p.pair_ns >= c.points[i - 1].pair_ns, "points in order") end
    end
    cal = c
  end)

  it("reads the event pair and CUPTI on the same launches #gpu", function()
    local ws = {}
    for i = 1, 5 do
      local w = s:window{ source = "event" }
      w:launch_loop{ fn = spin, grid = 1, block = 32, args = { SPIN_NS, 0, 0 }, source = "cupti" }
      w:close()
      w:collect()
      ws[i] = w
    end
    for _, w in ipairs(ws) do
      local _, ker = w:wait()
      assert.is_number(ker, w.cupti_why)
      assert.are.equal("cupti", w.kernel_src)
      assert.is_true(w.cupti_kernel_ns >= SPIN_NS - 1000)
      assert.is_true(w.cupti_kernel_ns <= w.event_kernel_ns,
        ("CUPTI %d ns longer than the enclosing pair %d ns"):format(w.cupti_kernel_ns, w.event_kernel_ns))
    end
  end)

  it("goes back to the pair, reporting its calibrated floor and error #gpu", function()
    assert(cal, "needs the calibration case")
    ctx:kernel_source("event")
    local r, w, win, ker = dispatch(1)
    assert.are.equal("event", r.kernel_src)
    assert.are.equal(ker, r.kernel_ns)
    assert.are.equal(win, r.device_window_ns)
    assert.are.equal(w.floor_ns, r.kernel_floor_ns)
    assert.is_true(r.kernel_floor_ns > 0)
    assert.is_true(r.kernel_error_ns > 0, "the calibration measured the error: " .. tostring(r))
    assert.is_nil(r.kernels)
    assert.are.equal(math.max(0, r.kernel_ns - r.kernel_floor_ns), w.kernel_calibrated_ns)
    assert.are.equal("cupti", ctx:kernel_source("cupti"))
  end)

  it("lost no kernel and gave up on none #gpu", function()
    assert.is_true(pp.flush(2000))
    local info = cu.cupti_info()
    assert.are.equal(0, info.lost)
    assert.are.equal(0, info.incomplete)
    assert.are.equal(0, info.pending)
    assert.is_true(info.matched >= 10)
  end)
end)
