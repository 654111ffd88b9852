-- phaseprobe.dispatch without a GPU: phase order, records, caches, knobs and
-- refusals, against the CPU test double (spec/helpers/cpu_device.lua). The
-- double runs no kernels, so nothing here says the GPU path works; that is
-- spec/dispatch_gpu_spec.lua's job.
local pp = require "phaseprobe"
local P = require "phaseprobe.dispatch.program"
local D = require "phaseprobe.dispatch"
local cpu_device = require "helpers.cpu_device"

local was_enabled

-- Some cases leave a dispatch open on purpose (one that raised) and begin
-- the next: the probe's notice of the drop is for a user, not the test run.
setup(function() pp.notices("none") end)
teardown(function() pp.notices("stderr") end)

local function setup_probe()
  was_enabled = pp.enabled()
  pp.enable()
  pp.use(pp.default_schema())
  pp.sink("none")
end

local function restore_probe()
  pp.sink("stderr")
  pp.enable(was_enabled)
  pp.tag("shape", nil)
  pp.tag("knob", nil)
end

local function index_of(list, value, from)
  for i = from or 1, #list do
    if list[i] == value then return i end
  end
  return nil
end

local function fresh(knobs, extra)
  local dev = cpu_device.new()
  local o = { device = dev, knobs = knobs }
  for k, v in pairs(extra or {}) do o[k] = v end
  return D.new(o), dev
end

local small = P.generate{ nodes = 40, barriers = 0, seed = 1, name = "small" }
local barred = P.generate{ nodes = 400, barriers = 3, seed = 2, name = "barred", fixpoint = 2 }
local N = 1024

local function run(d, prog, extra)
  local args = { n = N }
  for k, v in pairs(extra or {}) do args[k] = v end
  args.inputs = args.inputs or P.inputs(prog, args.n, 1)
  return d:dispatch(prog, args)
end

describe("phaseprobe.dispatch with the CPU double", function()
  setup(setup_probe)
  teardown(restore_probe)

  it("runs the nine phases in order, with the device calls where the reference makes them", function()
    local d, dev = fresh()
    for _, name in ipairs(D.PHASES) do
      local step = d.steps[name]
      d.steps[name] = function(dd, ctx)
        dev.log[#dev.log + 1] = "phase:" .. name
        return step(dd, ctx)
      end
    end
    dev.log = {}
    run(d, barred)
    local log = dev.log
    local pos = {}
    for _, name in ipairs(D.PHASES) do pos[name] = assert(index_of(log, "phase:" .. name), name) end
    for i = 2, #D.PHASES do
      assert.is_true(pos[D.PHASES[i - 1]] < pos[D.PHASES[i]], D.PHASES[i - 1] .. " before " .. D.PHASES[i])
    end
    local function between(call, a, b)
      local at = index_of(log, call, pos[a])
      assert.truthy(at, call .. " after phase " .. a)
      assert.is_true(b == nil or at < pos[b], call .. " inside phase " .. a)
      return at
    end
    between("upload", "stage", "resolve")
    between("memset", "stage", "resolve")
    local open = between("window_open", "stage", "resolve")
    assert.is_true(open > index_of(log, "memset", pos.stage), "the outer start event follows the clears")
    between("load", "resolve", "lease")
    between("func", "resolve", "lease")
    between("global", "resolve", "lease")
    between("max_active_blocks", "resolve", "lease")
    between("launch_loop", "launch", "release")
    local sync = between("synchronize", "release", "readback")
    assert.is_true(index_of(log, "read_u32", pos.release) > sync, "the counter is read after the synchronize")
    local close = between("window_close", "readback")
    assert.is_true(index_of(log, "download", pos.readback) > close, "downloads follow the outer end event")
    local collect = assert(index_of(log, "collect"))
    assert.is_true(collect > index_of(log, "synchronize", close), "collect after the completion wait")
    assert.equal(#log, collect, "nothing after collect")
  end)

  it("emits one record per dispatch with the counts, the times and a plain-sum residue", function()
    local d = fresh()
    local before = pp.stats().emitted
    local res = run(d, barred)
    assert.equal(before + 1, pp.stats().emitted)
    local r = res.record
    assert.equal("vyre-cuda-dispatch-phase", r._prefix)
    assert.equal(res.seq, r.seq)
    assert.equal(barred.nodes, r.nodes)
    assert.equal(res.ptx_bytes, r.ptx_bytes)
    assert.equal(#barred.buffers, r.buffers)
    assert.equal(#barred.buffers + 1, r.bindings)
    assert.equal(2, r.fixpoint)
    assert.equal(N // 256, r.grid_blocks)
    local named = 0
    for _, name in ipairs(D.PHASES) do
      named = named + r[name .. "_ns"]
      if name ~= "lease" then assert.is_true(r[name .. "_ns"] > 0, name .. "_ns charged") end
    end
    assert.equal(named, r.named_host_ns)
    assert.equal(r.wall_ns, r.named_host_ns + r.unattributed_ns)
    assert.is_true(r.sub_ptx_digest_ns > 0 and r.sub_ptx_vsa_ns > 0)
    assert.is_true(r.sub_ptx_digest_ns + r.sub_ptx_vsa_ns <= r.ptx_ns, "nested regions lie inside ptx")
    assert.is_true(r.enqueue_ns > 0 and r.wait_ns > 0)
    assert.is_true(r.enqueue_ns + r.wait_ns <= r.wall_ns)
    assert.equal(res.device_window_ns, r.device_window_ns)
    assert.equal(res.kernel_ns, r.kernel_ns)
    assert.equal("barred", r.shape)
    assert.equal("base", r.knob)
  end)

  it("captures wall_ns before collecting the device times and emitting", function()
    local d, dev = fresh()
    dev.faults.collect_spin_ns = 50000000 -- 50 ms inside collect()
    local r = run(d, small).record
    assert.is_true(r.wall_ns < 50000000, "wall_ns " .. r.wall_ns .. " includes collect()")
    assert.equal(r.wall_ns, r.named_host_ns + r.unattributed_ns)
  end)

  it("counts PTX cache outcomes per dispatch, not cumulatively", function()
    local d = fresh()
    local r1 = run(d, small).record
    local r2 = run(d, small).record
    local r3 = run(d, small).record
    assert.same({ 0, 1 }, { r1.ptx_cache_hits, r1.ptx_cache_misses })
    assert.same({ 1, 0 }, { r2.ptx_cache_hits, r2.ptx_cache_misses })
    assert.same({ 1, 0 }, { r3.ptx_cache_hits, r3.ptx_cache_misses })
    local r4 = run(d, barred).record
    assert.same({ 0, 1 }, { r4.ptx_cache_hits, r4.ptx_cache_misses })
    assert.equal(2, d.stats.lowerings)
  end)

  it("keys the PTX cache by content: an equal program built twice hits", function()
    local d = fresh()
    run(d, P.generate{ nodes = 100, barriers = 1, seed = 6 })
    local res = run(d, P.generate{ nodes = 100, barriers = 1, seed = 6, name = "other_name" })
    assert.equal("hit", res.ptx_cache)
    assert.equal("hit", res.module_cache)
  end)

  it("finds PTX in the disk cache and counts it as a hit and a disk hit", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local d1 = fresh(nil, { ptx_disk_cache = dir })
    assert.equal("miss", run(d1, small).ptx_cache)
    local d2 = fresh(nil, { ptx_disk_cache = dir })
    local res = run(d2, small)
    assert.equal("disk_hit", res.ptx_cache)
    assert.same({ 1, 0, 1 }, { res.record.ptx_cache_hits, res.record.ptx_cache_misses,
      res.record.ptx_cache_disk_hits })
    assert.equal(0, d2.stats.lowerings)
    assert.equal("hit", run(d2, small).ptx_cache)
    os.execute("rm -rf " .. dir)
  end)

  it("loads a module once per program and device", function()
    local d, dev = fresh()
    for _ = 1, 4 do run(d, small) end
    for _ = 1, 3 do run(d, barred) end
    assert.equal(2, dev.loads)
    assert.equal(2, d.stats.module_loads)
    assert.equal(5, d.stats.module_hits)
  end)

  it("audits arrivals: markers x blocks on every barrier dispatch", function()
    local d = fresh()
    local res = run(d, barred)
    assert.is_true(res.cooperative)
    assert.equal(3, res.markers)
    assert.equal(3 * (N // 256), res.ceiling)
    assert.equal(res.ceiling, res.arrivals)
    local plain = run(d, small)
    assert.is_false(plain.cooperative)
    assert.is_nil(plain.arrivals)
  end)

  it("refuses arrivals above the ceiling and releases the gate afterwards", function()
    local d, dev = fresh()
    dev.faults.extra_arrivals = 1
    local ok, err = pcall(run, d, barred)
    assert.is_false(ok)
    assert.matches("release: arrival audit failed: the counter holds 13 arrivals, above the ceiling of "
      .. "3 markers x 4 blocks = 12", err)
    dev.faults.extra_arrivals = nil
    local res = run(d, barred) -- the gate was released on the error path
    assert.equal(res.ceiling, res.arrivals)
  end)

  it("serialises dispatches of one module through its gate, unless the knob skips it", function()
    -- Another dispatch (a thread or coroutine) holding the module's gate is
    -- modelled by marking the gate held: a nested dispatch on one thread
    -- would reuse the probe's one accumulator per thread.
    local d = fresh()
    local first = run(d, barred)
    local entry = d:module_for(first.modkey)
    assert.is_nil(entry.gate, "released after the dispatch")
    entry.gate = 99
    local ok, err = pcall(run, d, barred)
    assert.is_false(ok)
    assert.matches("lease: the gate of module %x+ is held by dispatch 99, which shares its barrier counter", err)
    assert.equal(99, entry.gate, "a refused dispatch does not release another's gate")
    d:set_knobs{ skip_gate = true }
    local res = run(d, barred)
    assert.equal(res.ceiling, res.arrivals)
    assert.equal(1, d.stats.gate_acquires)
  end)

  it("walks the digest once with memo_digest, every dispatch without; the key stays the same", function()
    local d = fresh()
    for _ = 1, 3 do run(d, barred) end
    assert.equal(3, d.stats.digest_walks)
    d:set_knobs{ memo_digest = true }
    for _ = 1, 3 do
      local res = run(d, barred)
      assert.equal("hit", res.ptx_cache)
      assert.equal("memo_digest", res.record.knob)
    end
    assert.equal(4, d.stats.digest_walks)
    d:set_knobs{}
    run(d, barred)
    assert.equal(5, d.stats.digest_walks, "without the knob the memo is not consulted")
  end)

  it("scans the PTX for markers once per module with cache_scan", function()
    local d = fresh{ cache_scan = true }
    for _ = 1, 3 do assert.equal(3, run(d, barred).markers) end
    assert.equal(1, d.stats.marker_scans)
    local d2 = fresh()
    for _ = 1, 3 do run(d2, barred) end
    assert.equal(3, d2.stats.marker_scans)
  end)

  it("overrides the fixpoint count with the fixpoint knob", function()
    local d, dev = fresh{ fixpoint = 5 }
    local res = run(d, barred)
    assert.equal(5, res.fixpoint)
    assert.equal(5, res.record.fixpoint)
    assert.equal(5, dev.launches)
    assert.equal("fixpoint5", res.record.knob)
  end)

  it("counts markers with phaseprobe.ptx.count when it is there", function()
    local saved = pp.ptx.count
    local calls = 0
    pp.ptx.count = function(text, needle)
      calls = calls + 1
      assert.equal("grid.sync barrier #", needle)
      local n = 0
      for _ in text:gmatch("grid%.sync barrier #") do n = n + 1 end
      return n
    end
    local ok, err = pcall(function()
      local d = fresh()
      assert.equal(3, run(d, barred).markers)
    end)
    pp.ptx.count = saved
    assert(ok, err)
    assert.equal(1, calls)
  end)

  it("refuses a barrier program whose PTX carries no marker", function()
    local d = fresh()
    d.lower = function(_, prog) return (require("phaseprobe.dispatch.lower").ptx(prog):gsub("grid%.sync barrier #", "sync #")) end
    local ok, err = pcall(run, d, barred)
    assert.is_false(ok)
    assert.matches("lease: the program has grid barriers but its PTX carries no 'grid.sync barrier #' marker", err)
  end)

  it("refuses a cooperative grid that cannot be co-resident, with the figures", function()
    local d, dev = fresh()
    dev.faults.max_active = 1
    assert.equal(4, run(d, barred).grid) -- 4 blocks fit 1 per SM on 4 SMs
    local ok, err = pcall(run, d, barred, { n = 5 * 256 })
    assert.is_false(ok)
    assert.matches("resolve: a cooperative launch of 5 blocks of 256 threads cannot be co%-resident "
      .. "%(at most 1 block per SM x 4 SMs = 4%)", err)
    assert.is_true(pcall(run, d, small, { n = 5 * 256 }), "plain launches are not limited")
  end)

  it("says which call failed when the module does not load", function()
    local d, dev = fresh()
    dev.faults.load_fails = "CUDA_ERROR_INVALID_PTX: ptxas fatal"
    local ok, err = pcall(run, d, small)
    assert.is_false(ok)
    assert.equal("dispatch 'small': resolve: loading the module failed: CUDA_ERROR_INVALID_PTX: ptxas fatal", err)
  end)

  it("refuses bad dispatch arguments in prepare, naming the buffer or field", function()
    local d = fresh()
    local ok, err = pcall(d.dispatch, d, small, { n = N })
    assert.is_false(ok); assert.matches("no input data for input buffer 'in0'", err)
    local inputs = P.inputs(small, N, 1)
    inputs.in1 = { 1, 2, 3 }
    ok, err = pcall(d.dispatch, d, small, { n = N, inputs = inputs })
    assert.is_false(ok); assert.matches("input 'in1' has 3 elements, expected n = 1,024", err)
    ok, err = pcall(d.dispatch, d, small, { n = 0, inputs = inputs })
    assert.is_false(ok); assert.matches("n %(the element count%) must be an integer", err)
    ok, err = pcall(run, d, small, { block = 2048 })
    assert.is_false(ok); assert.matches("block must be an integer in %[1, 1024%], got 2048", err)
    ok, err = pcall(d.dispatch, d, { nodes = 3 }, { n = 1 })
    assert.is_false(ok); assert.matches("argument 1 must be a program", err)
  end)

  it("refuses unknown knobs and bad values", function()
    local ok, err = pcall(D.new, { device = cpu_device.new(), knobs = { memo = true } })
    assert.is_false(ok); assert.matches("unknown knob 'memo'", err)
    ok, err = pcall(D.new, { device = cpu_device.new(), knobs = { fixpoint = 0 } })
    assert.is_false(ok); assert.matches("knob 'fixpoint' must be a positive integer", err)
    ok, err = pcall(D.new, { device = {} })
    assert.is_false(ok); assert.matches("'device' must be a device object", err)
  end)

  it("refuses a schema without its phases", function()
    pp.schema{ prefix = "other", phases = { "prepare", "ptx" } }
    local ok, err = pcall(D.new, { device = cpu_device.new() })
    pp.use(pp.default_schema())
    assert.is_false(ok)
    assert.matches("the current schema 'other' has no phase 'modkey'", err)
  end)

  it("lets a step be swapped and the difference measured", function()
    local d = fresh()
    local prep = D.steps.prepare
    local calls = 0
    d.steps.prepare = function(dd, ctx)
      calls = calls + 1
      return prep(dd, ctx)
    end
    d.digest = function() return 1, 2 end -- a constant digest: no walk
    local r = run(d, barred).record
    assert.equal(1, calls)
    assert.is_true(r.sub_ptx_digest_ns < 100000)
  end)

  it("dispatches with the probe off and emits nothing", function()
    pp.disable()
    local before = pp.stats().emitted
    local ok, res = pcall(run, fresh(), barred)
    pp.enable()
    assert(ok, res)
    assert.is_nil(res.record)
    assert.equal(before, pp.stats().emitted)
    assert.is_table(res.outputs.out)
    assert.equal(N, #res.outputs.out)
    assert.is_true(res.wall_ns > 0)
  end)

  it("reads back every output and inout buffer", function()
    local res = run(fresh(), barred)
    local names = {}
    for name in pairs(res.outputs) do names[#names + 1] = name end
    table.sort(names)
    assert.same({ "out", "pa", "pb", "state" }, names)
    -- the double returns what was uploaded: the inout buffer's input
    assert.same(P.inputs(barred, N, 1).state, res.outputs.state)
  end)
end)

describe("phaseprobe.dispatch hashing", function()
  it("hashes bytes with FNV-1a 64", function()
    assert.equal("cbf29ce484222325", D.hash(""))
    assert.equal("af63dc4c8601ec8c", D.hash("a"))
    assert.equal("85944171f73967e8", D.hash("foobar"))
  end)

  it("digests every node: one changed constant changes the digest", function()
    local a = P.new{ buffers = { { name = "x", type = "u32", role = "inout" } },
                     body = { P.store("x", P.add(P.load("x"), 1)) } }
    local b = P.new{ buffers = { { name = "x", type = "u32", role = "inout" } },
                     body = { P.store("x", P.add(P.load("x"), 2)) } }
    local a1, a2 = D.digest(a)
    local b1, b2 = D.digest(b)
    assert.is_false(a1 == b1 and a2 == b2)
    local c1, c2 = D.digest(a)
    assert.same({ a1, a2 }, { c1, c2 })
  end)

  it("counts markers without phaseprobe.ptx.count", function()
    local saved = pp.ptx.count
    pp.ptx.count = nil
    local n = D.count_markers("x grid.sync barrier #0 y grid.sync barrier #1 grid.sync barrier")
    pp.ptx.count = saved
    assert.equal(2, n)
  end)
end)
