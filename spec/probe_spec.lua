-- The probe core through the Lua module: the reference's invariants and ours.
local pp = require "phaseprobe"
local shell = require "helpers.shell"
local probe = require "helpers.probe"
local fresh = probe.fresh
-- the interpreter for child processes (make tsan runs them in its own)
local LUA = os.getenv("PHASEPROBE_LUA") or "lua5.4"

local REFERENCE_FIELDS = {
  "seq", "nodes", "ptx_bytes", "buffers", "bindings", "fixpoint", "grid_blocks",
  "wall_ns", "enqueue_ns", "wait_ns", "device_window_ns", "kernel_ns",
  "prepare_ns", "ptx_ns", "modkey_ns", "stage_ns", "resolve_ns", "lease_ns",
  "launch_ns", "release_ns", "readback_ns",
  "sub_ptx_digest_ns", "sub_ptx_vsa_ns",
  "named_host_ns", "unattributed_ns", "ptx_cache_hits", "ptx_cache_misses",
}
local PHASES = { "prepare", "ptx", "modkey", "stage", "resolve", "lease", "launch", "release", "readback" }

local function spin(n)
  local x = 0
  for i = 1, n do x = x + i end
  return x
end

describe("the default schema", function()
  before_each(fresh)

  it("is the reference's: nine phases, two nested regions, six counts, its prefix", function()
    local s = pp.default_schema()
    assert.are.equal("vyre-cuda-dispatch-phase", s.prefix)
    assert.are.same(PHASES, s.phases)
    assert.are.same({ "ptx_digest", "ptx_vsa" }, s.nested)
    assert.are.same({ "sub_ptx_digest_ns", "sub_ptx_vsa_ns" }, s.nested_labels)
    assert.are.same({ "nodes", "ptx_bytes", "buffers", "bindings", "fixpoint", "grid_blocks" }, s.counts)
    local labels = {}
    for i, p in ipairs(PHASES) do labels[i] = p .. "_ns" end
    assert.are.same(labels, s.phase_labels)
    assert.are.same({ "ptx" }, s.caches)
    assert.are.equal(s.id, pp.default_schema().id)
    assert.is_nil(s.no_such_list)
    local mine = pp.schema { prefix = "idtest", phases = { "a" }, use = false }
    assert.are_not.equal(s.id, mine.id)
  end)

  it("prints the reference's fields first, in its order, then ours", function()
    local fields = pp.default_schema().fields
    for i, name in ipairs(REFERENCE_FIELDS) do
      assert.are.equal(name, fields[i], "field " .. i)
    end
    local extra = {}
    for i = #REFERENCE_FIELDS + 1, #fields do extra[#extra + 1] = fields[i] end
    assert.are.same({ "ptx_cache_disk_hits", "tid", "start_ns", "probe_ns", "kernel_src", "kernel_floor_ns",
      -- printed only when known: the event pair's measured error, and the
      -- device timeline (kernel_src=cupti)
      "kernel_error_ns", "kernels", "launch_at_ns", "kernel_first_ns", "kernel_last_ns",
      "launch_latency_ns", "host_gap_ns" }, extra)
  end)

  it("emits a line byte-for-byte the reference's up to ptx_cache_misses", function()
    pp.begin()
    for i, name in ipairs(PHASES) do pp.add_ns(name, i * 100) end
    pp.add_nested_ns("ptx_digest", 40)
    pp.add_nested_ns("ptx_vsa", 30)
    pp.counts { nodes = 12410, ptx_bytes = 3900000, buffers = 5, bindings = 6, fixpoint = 2, grid_blocks = 132 }
    pp.kernel_ns(777)
    pp.cache("ptx", "hit")
    pp.cache("ptx", "hit")
    pp.cache("ptx", "miss")
    local r = pp.emit { seq = 3, wall_ns = 10000, enqueue_ns = 6000, wait_ns = 4000, device_window_ns = 9000 }
    -- written out by hand from the reference's emit(): push_field order and names
    local expected = "vyre-cuda-dispatch-phase seq=3 nodes=12410 ptx_bytes=3900000 buffers=5"
      .. " bindings=6 fixpoint=2 grid_blocks=132 wall_ns=10000 enqueue_ns=6000 wait_ns=4000"
      .. " device_window_ns=9000 kernel_ns=777 prepare_ns=100 ptx_ns=200 modkey_ns=300"
      .. " stage_ns=400 resolve_ns=500 lease_ns=600 launch_ns=700 release_ns=800"
      .. " readback_ns=900 sub_ptx_digest_ns=40 sub_ptx_vsa_ns=30 named_host_ns=4500"
      .. " unattributed_ns=5500 ptx_cache_hits=2 ptx_cache_misses=1"
    local line = tostring(r)
    assert.are.equal(expected, line:sub(1, #expected))
    assert.are.equal(" ptx_cache_disk_hits=0 tid=", line:sub(#expected + 1, #expected + 27))
  end)
end)

describe("the partition", function()
  before_each(fresh)

  it("named_host_ns is the plain sum of the phases and excludes nested regions", function()
    pp.begin()
    pp.add_ns("prepare", 11)
    pp.add_ns("ptx", 22)
    pp.add_ns("readback", 33)
    pp.add_nested_ns("ptx_digest", 1000)
    local r = pp.emit { wall_ns = 100 }
    assert.are.equal(66, r.named_host_ns)
    assert.are.equal(1000, r.sub_ptx_digest_ns)
    assert.are.equal(34, r.unattributed_ns)
  end)

  it("named_host_ns + unattributed_ns == wall_ns when every phase is charged by real timing", function()
    pp.begin()
    for _, name in ipairs(PHASES) do
      local _ <close> = pp.phase(name)
      spin(2000)
    end
    do
      local _ <close> = pp.phase("ptx")
      local _n <close> = pp.nested("ptx_digest")
      spin(500)
    end
    pp.counts { nodes = 3 }
    pp.finish()
    local r = pp.emit()
    assert.is_true(r.wall_ns > 0)
    for _, name in ipairs(PHASES) do assert.is_true(r[name .. "_ns"] > 0, name) end
    assert.are.equal(r.wall_ns, r.named_host_ns + r.unattributed_ns)
    assert.is_true(r.sub_ptx_digest_ns > 0 and r.sub_ptx_digest_ns <= r.ptx_ns)
  end)

  it("prints the residue and never lets it go negative", function()
    pp.begin()
    pp.add_ns("prepare", 500)
    local r = pp.emit { wall_ns = 100 }
    assert.are.equal(500, r.named_host_ns)
    assert.are.equal(0, r.unattributed_ns)
    assert.truthy(tostring(r):find(" unattributed_ns=0 ", 1, true))
  end)

  it("saturates instead of wrapping", function()
    pp.begin()
    pp.add_ns("prepare", math.maxinteger)
    pp.add_ns("prepare", math.maxinteger)
    pp.add_ns("prepare", math.maxinteger)
    local r = pp.emit { wall_ns = 1 }
    -- u64 max prints as 18446744073709551615 (a Lua integer of -1)
    assert.truthy(tostring(r):find(" prepare_ns=18446744073709551615 ", 1, true))
    assert.truthy(tostring(r):find(" named_host_ns=18446744073709551615 ", 1, true))
    assert.are.equal(0, r.unattributed_ns)
  end)

  it("charge_remainder keeps a wrapper and the phase it wraps disjoint", function()
    pp.begin()
    local a = pp.now()
    local t = pp.mark()
    pp.measure("launch", spin, 20000)
    spin(20000)
    pp.charge_remainder("release", t, "launch")
    local b = pp.now()
    local r = pp.emit()
    assert.is_true(r.launch_ns >= 20000, r.launch_ns)
    -- the remainder is what was spent outside the inner phase: at least the
    -- second spin, and with the inner phase never more than the whole span
    assert.is_true(r.release_ns >= 20000, r.release_ns)
    assert.is_true(r.release_ns + r.launch_ns <= b - a,
      ("release %d + launch %d > %d measured around both"):format(r.release_ns, r.launch_ns, b - a))
  end)

  it("lap charges adjacent phases with shared boundaries", function()
    pp.begin()
    local t = pp.mark()
    spin(1000); t = pp.lap("prepare", t)
    spin(1000); t = pp.lap("ptx", t)
    spin(1000); pp.lap("modkey", t)
    pp.finish()
    local r = pp.emit()
    assert.is_true(r.prepare_ns > 0 and r.ptx_ns > 0 and r.modkey_ns > 0)
    assert.is_true(r.named_host_ns <= r.wall_ns)
  end)
end)

describe("scopes and measure", function()
  before_each(fresh)

  it("measure returns the function's results", function()
    pp.begin()
    local a, b, c = pp.measure("stage", function(x, y) return x + y, "two", nil end, 1, 2)
    assert.are.same({ 3, "two", nil }, { a, b, c })
    assert.is_true(pp.emit().stage_ns > 0)
  end)

  it("a <close> scope charges when the block exits by error", function()
    pp.begin()
    local ok, err = pcall(function()
      local _ <close> = pp.phase("resolve")
      spin(3000)
      error("boom")
    end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("boom"))
    local r = pp.emit()
    assert.is_true(r.resolve_ns > 0)
  end)

  it("measure charges and re-raises when the function errors", function()
    pp.begin()
    local ok, err = pcall(pp.measure, "lease", function() spin(3000); error({ code = 7 }) end)
    assert.is_false(ok)
    assert.are.equal(7, err.code)
    assert.is_true(pp.emit().lease_ns > 0)
  end)

  it("nested scopes charge the nested region and the phase, not the sum twice", function()
    pp.begin()
    do
      local _ <close> = pp.phase("ptx")
      do local _d <close> = pp.nested("ptx_digest"); spin(2000) end
      do local _v <close> = pp.nested("ptx_vsa"); spin(2000) end
    end
    local r = pp.emit { wall_ns = 1000000000 }
    assert.is_true(r.sub_ptx_digest_ns + r.sub_ptx_vsa_ns <= r.ptx_ns)
    assert.are.equal(r.ptx_ns, r.named_host_ns)
  end)

  it("the same phase can be entered many times and accumulates", function()
    pp.begin()
    for _ = 1, 5 do pp.add_ns("stage", 7) end
    assert.are.equal(35, pp.emit().stage_ns)
  end)
end)

describe("misuse", function()
  before_each(fresh)

  it("an unknown phase raises and lists the valid ones", function()
    pp.begin()
    local ok, err = pcall(pp.phase, "prepar")
    assert.is_false(ok)
    assert.truthy(err:find("unknown phase 'prepar'", 1, true))
    assert.truthy(err:find("prepare, ptx, modkey, stage, resolve, lease, launch, release, readback", 1, true))
    ok, err = pcall(pp.measure, "ptx_digest", spin, 1)
    assert.is_false(ok)
    assert.truthy(err:find("unknown phase 'ptx_digest'", 1, true))
    ok, err = pcall(pp.nested, "ptx")
    assert.truthy(err:find("unknown nested region 'ptx'", 1, true))
    pp.emit()
  end)

  it("emitting without pp.begin and without a wall raises: the probe measured none", function()
    pp.add_ns("ptx", 1)
    local ok, err = pcall(pp.emit)
    assert.is_false(ok)
    assert.truthy(err:find("no wall time", 1, true), err)
    assert.are.equal(1, pp.emit { wall_ns = 5 }.ptx_ns)
  end)

  it("unknown counts and bad values raise naming them", function()
    pp.begin()
    local ok, err = pcall(pp.counts, { nodez = 1 })
    assert.truthy(not ok and err:find("unknown count 'nodez'", 1, true))
    ok, err = pcall(pp.counts, { nodes = -1 })
    assert.truthy(not ok and err:find("count 'nodes' must be a non-negative integer", 1, true))
    ok, err = pcall(pp.add_ns, "ptx", -5)
    assert.truthy(not ok and err:find("must not be negative", 1, true))
    ok, err = pcall(pp.cache, "ptx", "maybe")
    assert.truthy(not ok and err:find("invalid option 'maybe'", 1, true))
    pp.emit()
  end)
end)

describe("disabled", function()
  before_each(fresh)
  after_each(function() pp.enable() end)

  it("records nothing and still makes the unmodified call", function()
    pp.disable()
    pp.begin()
    assert.are.equal(7, pp.measure("prepare", function() return 7 end))
    assert.is_nil(pp.phase("prepare"))
    pp.add_ns("prepare", 1000000)
    assert.is_nil(pp.mark())
    assert.is_nil(pp.emit())
    assert.are.equal(0, pp.store.count())
    assert.is_false(pp.is_open())
  end)

  it("switching on at run time starts recording", function()
    pp.disable()
    pp.begin()
    assert.is_nil(pp.emit())
    pp.enable()
    pp.begin()
    pp.add_ns("ptx", 5)
    assert.are.equal(5, pp.emit().ptx_ns)
    assert.are.equal(1, pp.store.count())
  end)

  it("reads PHASEPROBE and the reference's variable from the environment", function()
    local run = probe.enabled_with
    assert.are.equal("false", run("env -u PHASEPROBE -u VYRE_CUDA_DISPATCH_PHASE_PROBE"))
    assert.are.equal("true", run("env -u VYRE_CUDA_DISPATCH_PHASE_PROBE PHASEPROBE=1"))
    assert.are.equal("true", run("env -u PHASEPROBE VYRE_CUDA_DISPATCH_PHASE_PROBE=1"))
    assert.are.equal("false", run("env PHASEPROBE=0 VYRE_CUDA_DISPATCH_PHASE_PROBE=1"))
  end)
end)

describe("user schemas", function()
  before_each(fresh)
  after_each(function() pp.use(pp.default_schema()) end)

  it("declares phases, nested regions, counts, caches and a prefix", function()
    local s = pp.schema { prefix = "mydispatch", phases = { "plan", "encode", "submit" },
                          nested = { "hash" }, counts = { "ops" }, caches = { "plan", "pso" } }
    assert.are.equal(s, pp.schema())
    pp.begin()
    pp.add_ns("encode", 10)
    pp.add_nested_ns("hash", 4)
    pp.counts { ops = 9 }
    pp.cache("pso", "disk_hit")
    local r = pp.emit { seq = 1, wall_ns = 30 }
    local line = tostring(r)
    assert.truthy(line:find("^mydispatch seq=1 ops=9 wall_ns=30 "))
    assert.truthy(line:find(" plan_ns=0 encode_ns=10 submit_ns=0 sub_hash_ns=4 named_host_ns=10 unattributed_ns=20 plan_cache_hits=0 plan_cache_misses=0 pso_cache_hits=1 pso_cache_misses=0 ", 1, true))
    assert.are.equal(1, r.pso_cache_disk_hits)
  end)

  local refusals = {
    { "duplicate phase", { phases = { "a", "b", "a" } }, "label 'a_ns' appears twice" },
    { "phase/nested clash", { phases = { "ptx" }, nested = { "ptx" } }, "nested region 'ptx' clashes with phase 'ptx'" },
    { "clash with a fixed field", { phases = { "wall" } }, "label 'wall_ns' appears twice" },
    { "count clashing with a fixed field", { phases = { "a" }, counts = { "seq" } }, "label 'seq' appears twice" },
    { "bad name", { phases = { "Prepare" } }, "phase 1 ('Prepare'): a name is a lower-case identifier" },
    { "name with a space", { phases = { "a", "b c" } }, "phase 2 ('b c')" },
    { "too many phases", { phases = (function() local t = {} for i = 1, 33 do t[i] = "p" .. i end return t end)() }, "phases: 33 given, at most 32" },
    { "no phase", { phases = {} }, "at least one phase" },
    { "bad prefix", { prefix = "has space", phases = { "a" } }, "prefix 'has space'" },
    { "long name", { phases = { string.rep("a", 41) } }, "longer than 40 bytes" },
  }
  for _, case in ipairs(refusals) do
    it("refuses a schema with " .. case[1], function()
      local before = pp.schema()
      local ok, err = pcall(pp.schema, case[2])
      assert.is_false(ok)
      assert.truthy(err:find(case[3], 1, true), err)
      assert.are.equal(before, pp.schema())
    end)
  end

  it("an identical declaration returns the same schema", function()
    local a = pp.schema { prefix = "same", phases = { "x" } }
    local b = pp.schema { prefix = "same", phases = { "x" } }
    assert.are.equal(a, b)
  end)
end)

describe("the store", function()
  before_each(fresh)
  -- the store-full notices raised here on purpose go to a file, not the terminal
  local notices = os.tmpname()
  setup(function() assert(pp.notices(notices)) end)
  teardown(function() pp.notices("stderr"); os.remove(notices) end)

  it("keeps records in emit order", function()
    for i = 1, 5 do
      pp.begin(); pp.add_ns("ptx", i); pp.emit { seq = i }
    end
    local recs = pp.store.records()
    assert.are.equal(5, #recs)
    for i = 1, 5 do assert.are.equal(i, recs[i].seq); assert.are.equal(i, recs[i].ptx_ns) end
    assert.are.equal(3, pp.store.get(3).seq)
    assert.are.equal(2, #pp.store.records(4))
  end)

  it("is bounded, counts what it dropped, and stored + dropped == emitted", function()
    pp.store.capacity(10)
    local before = pp.stats().emitted
    for i = 1, 25 do pp.begin(); pp.emit { seq = i } end
    assert.are.equal(10, pp.store.count())
    assert.are.equal(15, pp.store.dropped())
    local st = pp.stats()
    assert.are.equal(25, st.emitted - before)
    assert.are.equal(st.stored + st.dropped, st.emitted - before)
    -- the first ten are kept, nothing reordered
    assert.are.equal(10, pp.store.get(10).seq)
  end)

  it("keeps the first N by default; keep('last') keeps the last N; both count what they let go", function()
    assert.equal("first", pp.store.keep())
    pp.store.capacity(10)
    local before = pp.stats().emitted
    for i = 1, 25 do pp.begin(); pp.emit { seq = i } end
    assert.equal(1, pp.store.get(1).seq)
    assert.equal(10, pp.store.get(10).seq)
    pp.store.clear()
    assert.equal("last", pp.store.keep("last"))
    for i = 1, 25 do pp.begin(); pp.emit { seq = i } end
    assert.equal(10, pp.store.count())
    assert.equal(15, pp.store.dropped())
    local recs = pp.store.records()
    for i = 1, 10 do assert.equal(15 + i, recs[i].seq) end
    local st = pp.stats()
    assert.equal(50, st.emitted - before)
    assert.equal(25, st.stored + st.dropped)
    pp.store.keep("first")
  end)

  it("lowering the capacity lets records go as the mode would have, counted", function()
    for _, mode in ipairs { "first", "last" } do
      pp.store.clear()
      pp.store.keep(mode)
      for i = 1, 20 do pp.begin(); pp.emit { seq = i } end
      pp.store.capacity(5)
      assert.equal(5, pp.store.count())
      assert.equal(15, pp.store.dropped())
      assert.equal(mode == "first" and 1 or 16, pp.store.get(1).seq)
      assert.equal(mode == "first" and 5 or 20, pp.store.get(5).seq)
      pp.store.capacity(100000)
    end
    pp.store.keep("first")
  end)

  it("'last' over many blocks: every kept record exact, schemas and tag lengths mixed", function()
    local wide = pp.schema { prefix = "wide", phases = { "a", "b", "c", "d", "e", "f", "g", "h" },
                             counts = { "n1", "n2", "n3" }, use = false }
    pp.store.keep("last")
    pp.store.capacity(700)
    for i = 1, 5000 do
      if i % 3 == 0 then pp.use(wide) else pp.use(pp.default_schema()) end
      if i % 7 == 0 then pp.tag("shape", nil) else pp.tag("shape", "s" .. ("x"):rep(i % 50)) end
      pp.begin()
      pp.count(i % 3 == 0 and "n2" or "nodes", i)
      pp.emit { seq = i }
    end
    pp.use(pp.default_schema())
    pp.tag("shape", nil)
    assert.equal(700, pp.store.count())
    assert.equal(4300, pp.store.dropped())
    for k, r in ipairs(pp.store.records()) do
      local i = 4300 + k
      assert.equal(i, r.seq)
      assert.equal(i, i % 3 == 0 and r.n2 or r.nodes)
      assert.equal(i % 3 == 0 and "wide" or "vyre-cuda-dispatch-phase", r._prefix)
      if i % 7 == 0 then assert.is_nil(r.shape) else assert.equal("s" .. ("x"):rep(i % 50), r.shape) end
    end
    pp.store.keep("first")
  end)

  it("refuses an unknown mode, naming the valid ones", function()
    local ok, err = pcall(pp.store.keep, "sideways")
    assert.is_false(ok)
    assert.truthy(err:find("invalid option 'sideways'", 1, true), err)
    assert.equal("first", pp.store.keep())
  end)

  it("carries tags into records and the line, sorted by key", function()
    pp.tag("shape", "cjk")
    pp.tag("device", "0")
    pp.begin()
    local r = pp.emit { seq = 1 }
    assert.are.equal("cjk", r.shape)
    assert.are.equal("0", r.device)
    assert.truthy(tostring(r):find(" kernel_floor_ns=0 device=0 shape=cjk$"))
    assert.are.equal("cjk", pp.store.get(1).shape)
    pp.tag("device", nil)
    assert.has_error(function() pp.tag("Bad Key", "x") end)
  end)
end)

describe("the line sink", function()
  before_each(fresh)
  after_each(function() pp.sink("none") end)
  -- the notices raised here on purpose go to a file, not the terminal
  local notices = os.tmpname()
  setup(function() assert(pp.notices(notices)) end)
  teardown(function() pp.notices("stderr"); os.remove(notices) end)

  it("writes one line per record to a file, after the record was captured", function()
    local path = os.tmpname()
    assert.is_true(pp.sink(path))
    for i = 1, 3 do pp.begin(); pp.add_ns("stage", i); pp.emit { seq = i } end
    pp.sink("none")
    local lines = {}
    for l in io.lines(path) do lines[#lines + 1] = l end
    os.remove(path)
    assert.are.equal(3, #lines)
    assert.are.equal(tostring(pp.store.get(2)), lines[2])
  end)

  it("an unwritable sink never fails the dispatch; the failure is counted", function()
    local before = pp.stats().line_failures
    assert.is_true(pp.sink("/dev/full"))
    for i = 1, 4 do pp.begin(); pp.emit { seq = i } end
    pp.sink("none")
    local st = pp.stats()
    assert.are.equal(4, st.line_failures - before)
    assert.are.equal(4, pp.store.count())
    local f = assert(io.open(notices))
    assert.truthy(f:read("a"):find("record lines to /dev/full could not be written", 1, true))
    f:close()
  end)

  it("a path that cannot be opened returns nil and a message", function()
    local ok, err = pp.sink("/nonexistent/dir/log")
    assert.is_nil(ok)
    assert.truthy(err:find("/nonexistent/dir/log", 1, true))
  end)
end)

describe("the clock", function()
  it("says which clock is in use and why", function()
    local c = pp.clock()
    assert.truthy(({ tsc = true, monotonic = true, monotonic_raw = true })[c.name])
    assert.is_string(c.reason)
    assert.is_number(c.read_ns.monotonic)
    if c.name == "tsc" then assert.is_true(c.tsc_invariant and c.tsc_ghz > 0) end
  end)

  it("agrees with os.time-scale sleeps within 1%", function()
    local t0 = pp.now()
    local c0 = os.clock()
    local w0 = os.time()
    os.execute("sleep 0.2")
    local el = pp.now() - t0
    assert.is_true(el > 195e6 and el < 400e6, "elapsed " .. el)
    assert.is_true(os.clock() - c0 < 0.2) -- we slept, not spun
    assert.is_true(os.time() - w0 <= 1)
  end)
end)

describe("threads", function()
  it("keeps each C thread's accumulator separate: every record is exactly its thread's", function()
    shell.prints("build/threads_helper 8 20000 2>/dev/null",
      "^ok threads=8 records=160000 stored=100000 dropped=60000 emitted=160000 bad=0")
  end)
end)

describe("the C API example", function()
  it("emits the same line shape from a native program", function()
    local p = io.popen("PHASEPROBE=1 build/c_dispatch 3 500 2>&1 1>/dev/null")
    local lines = {}
    for l in p:lines() do lines[#lines + 1] = l end
    p:close()
    assert.are.equal(3, #lines)
    for i, l in ipairs(lines) do
      assert.truthy(l:find("^vyre%-cuda%-dispatch%-phase seq=" .. (i - 1) .. " nodes=500 "))
      local wall = tonumber(l:match(" wall_ns=(%d+)"))
      local named = tonumber(l:match(" named_host_ns=(%d+)"))
      local un = tonumber(l:match(" unattributed_ns=(%d+)"))
      assert.are.equal(wall, named + un)
    end
    assert.truthy(lines[1]:find(" ptx_cache_hits=0 ptx_cache_misses=1 ", 1, true))
    assert.truthy(lines[2]:find(" ptx_cache_hits=1 ptx_cache_misses=0 ", 1, true))
  end)
end)

describe("examples/phases.lua", function()
  it("prints the reference's fields in order and a partition that adds up to wall_ns", function()
    local p = io.popen(LUA .. " examples/phases.lua 2>&1")
    local line = p:read("l")
    local sum = p:read("l")
    local ok = p:close()
    assert.is_true(ok, tostring(line) .. "\n" .. tostring(sum))
    local names = {}
    for name in line:gmatch(" ([%w_]+)=") do names[#names + 1] = name end
    local ref = { "seq", "nodes", "ptx_bytes", "buffers", "bindings", "fixpoint", "grid_blocks",
      "wall_ns", "enqueue_ns", "wait_ns", "device_window_ns", "kernel_ns", "prepare_ns", "ptx_ns",
      "modkey_ns", "stage_ns", "resolve_ns", "lease_ns", "launch_ns", "release_ns", "readback_ns",
      "sub_ptx_digest_ns", "sub_ptx_vsa_ns", "named_host_ns", "unattributed_ns",
      "ptx_cache_hits", "ptx_cache_misses" }
    assert.truthy(line:find("^vyre%-cuda%-dispatch%-phase "))
    for i, n in ipairs(ref) do assert.are.equal(n, names[i]) end
    local named, un, total, wall = sum:match("(%d+) %+ unattributed_ns (%d+) = (%d+), wall_ns (%d+)")
    assert.are.equal(wall, total)
    assert.are.equal(tonumber(named) + tonumber(un), tonumber(wall))
  end)
end)
