-- phaseprobe.dispatch on a real GPU (tag #gpu: `make test-gpu`). Every
-- output is checked against the CPU evaluation of the same program; every
-- barrier dispatch's arrival audit must equal markers x blocks. Kept small:
-- a few programs of at most 2,500 nodes (PTX JIT is slow for large modules)
-- plus one short run of the demo, which loads the 10,000-node module once.
local pp = require "phaseprobe"
local P = require "phaseprobe.dispatch.program"
local D = require "phaseprobe.dispatch"

local dev, why
local function device()
  if dev == nil then
    dev, why = D.cuda_device(0)
    dev = dev or false
  end
  assert(dev, "no CUDA device: " .. tostring(why))
  return dev
end

local function check_record(r, res)
  assert.equal(r.wall_ns, r.named_host_ns + r.unattributed_ns)
  assert.is_true(r.kernel_ns > 0, "kernel_ns from the inner event pair")
  assert.equal(res.kernel_ns, r.kernel_ns, "collect recorded kernel_ns into the record")
  assert.equal(res.device_window_ns, r.device_window_ns)
  assert.is_true(r.device_window_ns >= r.kernel_ns, "the outer window contains the inner pair")
  assert.equal("event", r.kernel_src)
  assert.is_true(r.enqueue_ns + r.wait_ns <= r.wall_ns)
  for _, name in ipairs{ "prepare", "ptx", "modkey", "stage", "resolve", "launch", "release", "readback" } do
    assert.is_true(r[name .. "_ns"] > 0, name .. "_ns charged")
  end
end

local function dispatch_checked(d, prog, n, want, extra)
  local inputs = P.inputs(prog, n, 3)
  want = want or prog:evaluate(inputs, n, extra and extra.fixpoint or d.knobs.fixpoint or prog.fixpoint)
  local args = { n = n, inputs = inputs }
  for k, v in pairs(extra or {}) do args[k] = v end
  local res = d:dispatch(prog, args)
  local ok, msg = P.compare(prog, res.outputs, want)
  assert(ok, string.format("%s (knobs %s): %s", prog.name, d:knob_label(), tostring(msg)))
  if res.cooperative then
    assert.equal(prog.barriers, res.markers)
    assert.equal(res.markers * res.grid, res.ceiling)
    assert.equal(res.ceiling, res.arrivals, "arrival audit: markers x blocks")
  end
  if res.record then check_record(res.record, res) end
  return res, want
end

describe("phaseprobe.dispatch on the GPU #gpu", function()
  local saved = require("helpers.probe").saved()
  setup(function()
    saved.save()
    pp.enable()
    pp.use(pp.default_schema())
    pp.sink("none")
  end)
  teardown(saved.restore)

  it("opens the CUDA device", function()
    local d = device()
    assert.equal("cuda", d.kind)
    assert.is_true(d.cc_major >= 7, "cooperative launch and nanosecond events need sm_70+")
    assert.is_true(d.sm_count > 0)
  end)

  it("runs a plain program, loads its module once, and checks every output", function()
    local d = D.new{ device = device() }
    local prog = P.generate{ nodes = 60, barriers = 0, seed = 21, name = "plain" }
    local n = 4096 + 17 -- a partial last block
    local first, want = dispatch_checked(d, prog, n)
    assert.equal("miss", first.ptx_cache)
    assert.is_false(first.cooperative)
    for _ = 1, 3 do
      local res = dispatch_checked(d, prog, n, want)
      assert.equal("hit", res.ptx_cache)
      assert.equal("hit", res.module_cache)
    end
    assert.equal(1, d.stats.module_loads)
    d:close()
  end)

  it("runs a barrier program cooperatively under every knob combination", function()
    local d = D.new{ device = device() }
    local prog = P.generate{ nodes = 2000, barriers = 4, seed = 22, name = "barriers", fixpoint = 3 }
    local n = 16 * 256
    local want = prog:evaluate(P.inputs(prog, n, 3), n, 3)
    for mask = 0, 7 do
      d:set_knobs{ memo_digest = mask & 1 ~= 0, cache_scan = mask & 2 ~= 0, skip_gate = mask & 4 ~= 0 }
      for _ = 1, 2 do
        local res = dispatch_checked(d, prog, n, want)
        assert.is_true(res.cooperative)
        assert.equal(16, res.grid)
      end
    end
    for _, f in ipairs{ 1, 5 } do
      d:set_knobs{ fixpoint = f }
      local res = dispatch_checked(d, prog, n)
      assert.equal(f, res.record.fixpoint)
    end
    assert.equal(1, d.stats.module_loads)
    d:close()
  end)

  it("computes i32 and f32 programs with barriers", function()
    local d = D.new{ device = device() }
    for _, ty in ipairs{ "i32", "f32" } do
      local prog = P.generate{ nodes = 400, barriers = 2, type = ty, seed = 23, name = ty, fixpoint = 2 }
      dispatch_checked(d, prog, 3000)
    end
    d:close()
  end)

  it("synchronises the largest co-resident grid", function()
    local d = D.new{ device = device() }
    -- few nodes: the CPU evaluation runs over every element of the full grid
    local prog = P.generate{ nodes = 40, barriers = 2, seed = 24, name = "fullgrid", fixpoint = 2 }
    local first = dispatch_checked(d, prog, 256)
    local per_sm = d:module_for(first.modkey).max_active[256]
    assert.is_true(per_sm >= 1)
    local blocks = per_sm * dev.sm_count
    local res = dispatch_checked(d, prog, blocks * 256)
    assert.equal(blocks, res.grid)
    local ok, err = pcall(d.dispatch, d, prog, { n = (blocks + 1) * 256, inputs = P.inputs(prog, (blocks + 1) * 256, 3) })
    assert.is_false(ok)
    assert.matches("cannot be co%-resident", err)
    d:close()
  end)

  it("refuses arrivals above the ceiling read back from the device, then recovers", function()
    local d = D.new{ device = device() }
    local prog = P.generate{ nodes = 200, barriers = 2, seed = 25, name = "audit" }
    local n = 8 * 256
    dispatch_checked(d, prog, n)
    d.steps.release = function(dd, ctx)
      dd.stream:synchronize()
      ctx.entry.counter:write_u32(ctx.ceiling + 1)
      return D.steps.release(dd, ctx)
    end
    local ok, err = pcall(d.dispatch, d, prog, { n = n, inputs = P.inputs(prog, n, 3) })
    assert.is_false(ok)
    assert.matches("arrival audit failed: the counter holds 17 arrivals, above the ceiling of 2 markers x 8 blocks = 16", err)
    d.steps.release = D.steps.release
    dispatch_checked(d, prog, n)
    d:close()
  end)

  it("dispatches with the probe off", function()
    local d = D.new{ device = device() }
    local prog = P.generate{ nodes = 100, barriers = 1, seed = 26, name = "off" }
    pp.disable()
    local ok, res = pcall(dispatch_checked, d, prog, 1024)
    pp.enable()
    assert(ok, res)
    assert.is_nil(res.record)
    d:close()
  end)

  it("runs the demo end to end with every check passing", function()
    local demo = require "phaseprobe.dispatch.demo"
    local lines = {}
    local path = os.tmpname()
    local code = demo.live(device(), { rounds = 1, log = path }, function(l) lines[#lines + 1] = l end, false)
    local log = assert(demo.load_log(path))
    os.remove(path)
    assert.equal(0, code, table.concat(lines, "\n"))
    assert.equal("cuda", log.meta.kind)
    assert.matches("^%d+/%d+$", log.checks.outputs)
    local a, b = log.checks.outputs:match("(%d+)/(%d+)")
    assert.equal(a, b)
  end)
end)
