-- Every probe entry point's arguments: what a record could silently get
-- wrong from a bad argument (a tag that shadows a field, a name cut at a
-- NUL, a float taken for a path, a clock switched under an open dispatch)
-- is refused with an error that names the argument, or has a documented
-- meaning that the spec pins down.
local pp = require "phaseprobe"
local probe = require "helpers.probe"
local fresh, raises = probe.fresh, probe.raises

describe("tags", function()
  before_each(fresh)

  it("refuse every field name of the default schema as a key", function()
    for _, f in ipairs(pp.default_schema().fields) do
      raises("'" .. f .. "' is a field of", pp.tag, f, "x")
    end
  end)

  it("refuse keys starting with '_' (the record's own names)", function()
    for _, k in ipairs { "_fields", "_prefix", "_x" } do
      raises("starts with '_'", pp.tag, k, "x")
    end
  end)

  it("refuse the fields of any schema declared in the process", function()
    pp.schema { prefix = "tagtest", phases = { "encode" }, counts = { "ops" }, caches = { "plan" }, use = false }
    for _, k in ipairs { "ops", "encode_ns", "plan_cache_hits", "plan_cache_disk_hits" } do
      raises("is a field of", pp.tag, k, "x")
    end
  end)

  it("a schema whose field is a tag of this thread is refused, naming the tag", function()
    pp.tag("widgets", "3")
    raises("tag 'widgets'", pp.schema, { prefix = "tagclash", phases = { "a" }, counts = { "widgets" }, use = false })
    pp.tag("widgets", nil)
    assert.truthy(pp.schema { prefix = "tagclash", phases = { "a" }, counts = { "widgets" }, use = false })
  end)

  it("the lines of tagged records all read back", function()
    pp.tag("shape", "cjk")
    for i = 1, 4 do pp.begin(); pp.add_ns("ptx", i); pp.emit { seq = i } end
    local lines = {}
    for _, r in ipairs(pp.store.records()) do lines[#lines + 1] = tostring(r) end
    local set = pp.records.from_string(table.concat(lines, "\n") .. "\n")
    assert.are.equal(4, #set)
  end)

  it("take strings only: keys and values of other types are refused", function()
    raises("bad argument #1", pp.tag, 1, "2")
    raises("bad argument #2", pp.tag, "k", 2)
    raises("bad argument #2", pp.tag, "k", true)
    raises("bad argument #1", pp.tag, {}, "x")
    pp.tag("k", "v")
    pp.tag("k", nil) -- nil removes
    pp.begin()
    assert.is_nil(tostring(pp.emit()):find(" k=", 1, true))
  end)
end)

describe("embedded NULs", function()
  before_each(fresh)

  local cases = {
    { "a tag key", function() pp.tag("sh\0ape", "x") end },
    { "a tag value", function() pp.tag("shape", "cjk\0x") end },
    { "a schema prefix", function() pp.schema { prefix = "ab\0c", phases = { "a" }, use = false } end },
    { "a schema phase", function() pp.schema { phases = { "a\0b" }, use = false } end },
    { "a schema nested region", function() pp.schema { phases = { "a" }, nested = { "n\0m" }, use = false } end },
    { "a schema count", function() pp.schema { phases = { "a" }, counts = { "c\0d" }, use = false } end },
    { "a schema cache", function() pp.schema { phases = { "a" }, caches = { "c\0d" }, use = false } end },
    { "a phase name", function() pp.begin(); pp.add_ns("ptx\0x", 1) end },
    { "a count name", function() pp.begin(); pp.counts { ["nodes\0x"] = 1 } end },
    { "a count name (count)", function() pp.begin(); pp.count("nodes\0x", 1) end },
    { "a cache name", function() pp.begin(); pp.cache("ptx\0x", "hit") end },
    { "a cache outcome", function() pp.begin(); pp.cache("ptx", "hit\0x") end },
    { "a kernel source", function() pp.begin(); pp.kernel_ns(5, "user\0x") end },
    { "a clock name", function() pp.select_clock("tsc\0x") end },
    { "a store mode", function() pp.store.keep("last\0x") end },
    { "a sink path", function() pp.sink("/tmp/pp\0x") end },
    { "a sink target", function() pp.sink("none\0x") end },
    { "a sink write option", function() pp.sink("none", { write = "record\0x" }) end },
    { "a sink option name", function() pp.sink("none", { ["write\0x"] = "record" }) end },
    { "an emit field name", function() pp.begin(); pp.emit { ["seq\0x"] = 1 } end },
    { "a schema field name", function() pp.schema { ["phases\0x"] = { "a" }, phases = { "a" }, use = false } end },
    { "a notices path", function() pp.notices("/tmp/pp-notices\0x") end },
    { "a notices target", function() pp.notices("none\0x") end },
  }
  for _, c in ipairs(cases) do
    it("in " .. c[1] .. " are refused", function()
      raises("NUL", c[2])
    end)
  end

  it("a notices path cut at the NUL is never created", function()
    os.remove("/tmp/pp-notices")
    pcall(pp.notices, "/tmp/pp-notices\0x")
    pp.notices("stderr")
    assert.is_nil(io.open("/tmp/pp-notices"))
  end)

  it("in a key of the module table find no submodule", function()
    assert.is_nil(pp["records\0x"])
    assert.is_nil(rawget(pp, "records\0x"))
  end)

  it("in a key of a schema, a record or a store find no field", function()
    assert.is_nil(pp.schema()["prefix\0x"])
    assert.is_nil(pp.schema()["phases\0x"])
    pp.begin()
    local r = pp.emit()
    assert.is_nil(r["seq\0x"])
    local set = pp.parse.string(tostring(r) .. "\n")
    assert.is_nil(set:row(1)["seq\0x"])
  end)
end)

describe("the clock", function()
  before_each(fresh)
  after_each(function()
    if pp.is_open() then pp.emit { wall_ns = 0 } end
    pp.select_clock(pp.clock().tsc_ghz > 0 and "tsc" or "monotonic")
  end)

  it("is not switched while a dispatch is open on this thread", function()
    local home = pp.clock().name
    pp.begin()
    raises("dispatch is open", pp.select_clock, "monotonic")
    assert.are.equal(home, pp.clock().name)
    pp.emit()
    assert.is_true(pp.select_clock("monotonic"))
    assert.are.equal("monotonic", pp.clock().name)
  end)

  it("is not switched while a scope is open on this thread", function()
    local s = pp.phase("ptx")
    raises("scope is open", pp.select_clock, "monotonic")
    getmetatable(s).__close(s)
    pp.emit { wall_ns = 0 }
  end)
end)

describe("the sink", function()
  before_each(fresh)

  it("takes an integer descriptor: a float is an error, never a file name", function()
    raises("descriptor must be an integer", pp.sink, 2 ^ 40)
    raises("descriptor must be an integer", pp.sink, 3.0)
    raises("descriptor must be an integer", pp.sink, 0 / 0)
    assert.is_nil(io.open("1099511627776.0"))
    assert.is_nil(io.open("3.0"))
  end)

  it("a descriptor that names nothing open returns nil and says so", function()
    local ok, msg = pp.sink(987)
    assert.is_nil(ok)
    assert.truthy(msg:find("descriptor 987", 1, true), msg)
    raises("descriptor out of range", pp.sink, -2)
    raises("descriptor out of range", pp.sink, math.maxinteger)
  end)

  it("takes a string or a number, nothing else", function()
    raises("bad argument #1", pp.sink, {})
    raises("bad argument #1", pp.sink, true)
  end)
end)

describe("the notices", function()
  before_each(fresh)
  after_each(function() pp.notices("stderr") end)

  it("take an integer descriptor: a float is an error, never a file name", function()
    os.remove("1099511627776.0")
    os.remove("3.0")
    raises("descriptor must be an integer", pp.notices, 2 ^ 40)
    raises("descriptor must be an integer", pp.notices, 3.0)
    raises("descriptor must be an integer", pp.notices, 0 / 0)
    raises("descriptor must be an integer", pp.notices, math.huge)
    assert.is_nil(io.open("1099511627776.0"))
    assert.is_nil(io.open("3.0"))
  end)

  it("a descriptor out of range is refused; one that names nothing open returns nil", function()
    raises("descriptor out of range", pp.notices, -2)
    raises("descriptor out of range", pp.notices, math.maxinteger)
    local ok, msg = pp.notices(987)
    assert.is_nil(ok)
    assert.truthy(msg:find("descriptor 987", 1, true), msg)
    assert.is_true(pp.notices(2))
  end)

  it("take a string or a number, nothing else", function()
    raises("bad argument #1", pp.notices, {})
    raises("bad argument #1", pp.notices, true)
    raises("bad argument #1", pp.notices)
  end)
end)

describe("pp.isatty", function()
  it("takes a file or an integer descriptor: a float or a numeric string is refused", function()
    raises("descriptor must be an integer", pp.isatty, 3.0)
    raises("descriptor must be an integer", pp.isatty, 2 ^ 40)
    raises("file or descriptor expected", pp.isatty, "1")
    raises("file or descriptor expected", pp.isatty, {})
    assert.is_false(pp.isatty(io.tmpfile()))
    assert.are.equal("boolean", type(pp.isatty(2)))
  end)
end)

describe("a dispatch", function()
  -- dispatches dropped on purpose: their notice is checked in a process of
  -- its own below, not said to the test run
  before_each(function() fresh(); pp.notices("none") end)
  after_each(function() pp.notices("stderr") end)

  it("begun again before its emit is dropped, counted, never merged", function()
    local before = pp.stats().abandoned
    pp.begin()
    pp.add_ns("ptx", 500)
    pp.counts { nodes = 7 }
    pp.begin()
    pp.add_ns("stage", 3)
    local r = pp.emit { wall_ns = 100 }
    assert.are.equal(0, r.ptx_ns)
    assert.are.equal(0, r.nodes)
    assert.are.equal(3, r.stage_ns)
    assert.are.equal(before + 1, pp.stats().abandoned)
  end)

  -- The notice is said once per process: each case runs in a fresh one.
  local function notices_of(script)
    local shell = require "helpers.shell"
    local out = os.tmpname()
    local src = os.tmpname()
    local f = assert(io.open(src, "wb"))
    f:write('package.cpath = "./?.so;" .. package.cpath\n',
      'local pp = require "phaseprobe"\n',
      'pp.enable(); pp.sink("none"); assert(pp.notices(', ("%q"):format(out), '))\n',
      script, '\nassert(pp.flush())\n')
    f:close()
    local ok, output = shell.run((os.getenv("PHASEPROBE_LUA") or "lua5.4") .. " " .. src)
    os.remove(src)
    assert(ok, output)
    local text = assert(io.open(out, "rb")):read("a")
    os.remove(out)
    return text, output
  end

  it("charges made before pp.begin and dropped by it are said, once, with what they held", function()
    local text = notices_of [[
      pp.add_ns("ptx", 500); pp.counts { nodes = 7 }
      pp.begin()
      local r = pp.emit()
      assert(r.ptx_ns == 0 and r.nodes == 0, "the charges are not merged")
      pp.add_ns("stage", 9); pp.begin(); pp.emit()
      assert(pp.stats().abandoned == 2, "both counted")
    ]]
    assert.truthy(text:find("dropped a dispatch", 1, true), text)
    assert.truthy(text:find("ptx_ns=500", 1, true), text)
    assert.truthy(text:find("nodes=7", 1, true), text)
    assert.truthy(text:find("abandoned", 1, true), text)
    local _, n = text:gsub("dropped a dispatch", "")
    assert.are.equal(1, n, text)
  end)

  it("a dispatch begun and begun again is said too", function()
    local text = notices_of [[
      pp.begin()
      pp.begin()
      pp.emit()
    ]]
    assert.truthy(text:find("dropped a dispatch", 1, true), text)
    assert.truthy(text:find("begun", 1, true), text)
  end)

  it("a begin after an emit drops nothing and says nothing", function()
    local text = notices_of [[
      pp.begin(); pp.add_ns("ptx", 5); pp.emit()
      pp.begin(); pp.emit()
      pp.add_ns("ptx", 5); pp.emit { wall_ns = 10 }
      pp.begin(); pp.emit()
      assert(pp.stats().abandoned == 0)
    ]]
    assert.are.equal("", text)
  end)

  it("a begin after an emit drops nothing", function()
    local before = pp.stats().abandoned
    pp.begin(); pp.emit()
    pp.begin(); pp.emit()
    assert.are.equal(before, pp.stats().abandoned)
  end)
end)

describe("marks and laps", function()
  before_each(fresh)
  after_each(function() if pp.is_open() then pp.emit { wall_ns = 0 } end end)

  it("lap and charge without a start argument are refused", function()
    pp.begin()
    raises("bad argument #2", pp.lap, "ptx")
    raises("bad argument #2", pp.charge, "ptx")
    raises("bad argument #2", pp.charge_nested, "ptx_digest")
    raises("bad argument #2", pp.charge_remainder, "ptx")
  end)

  it("a nil start (pp.mark() while disabled) charges nothing; lap returns a new start", function()
    pp.begin()
    local t = pp.lap("ptx", nil)
    assert.is_true(math.type(t) == "integer" and t > 0)
    pp.charge("stage", nil)
    t = pp.lap("prepare", t)
    local r = pp.emit()
    assert.are.equal(0, r.ptx_ns)
    assert.are.equal(0, r.stage_ns)
    assert.is_true(r.prepare_ns > 0)
  end)

  it("a start of the wrong type is refused", function()
    pp.begin()
    raises("bad argument #2", pp.lap, "ptx", 1.5)
    raises("bad argument #2", pp.lap, "ptx", "12")
    raises("bad argument #2", pp.charge, "ptx", {})
  end)

  it("a value that cannot be a start (before the clock's start, or later than now) is refused", function()
    pp.begin()
    local later = pp.mark() + 1000000000000 -- 10^12 ticks: minutes ahead on any clock
    for _, bad in ipairs { 1, 0x7fff, later, math.maxinteger, -5 } do
      local err = raises("not a start from phaseprobe.mark()", pp.lap, "prepare", bad)
      assert.truthy(tostring(err):find("bad argument #2", 1, true), tostring(err))
      raises("not a start", pp.charge, "ptx", bad)
      raises("not a start", pp.charge_since, "ptx", bad)
      raises("not a start", pp.charge_nested, "ptx_digest", bad)
      raises("not a start", pp.charge_remainder, "ptx", bad, "stage")
    end
    raises("earlier than the probe clock's first reading", pp.lap, "prepare", 1)
    raises("later than now", pp.lap, "prepare", later)
    -- nothing was charged, and a start from pp.mark() still is
    local t = pp.mark()
    t = pp.lap("stage", t)
    local r = pp.emit()
    assert.are.same({ 0, 0, 0 }, { r.prepare_ns, r.ptx_ns, r.sub_ptx_digest_ns })
    assert.is_true(math.type(t) == "integer")
  end)

  it("ticks_to_ns converts marks only, as the charges take them", function()
    local t0 = pp.mark()
    raises("bad argument #1", pp.ticks_to_ns, 1, t0)
    raises("not a mark from phaseprobe.mark()", pp.ticks_to_ns, 1, t0)
    raises("bad argument #2", pp.ticks_to_ns, t0, t0 + 1000000000000)
    assert.is_true(pp.ticks_to_ns(t0, pp.mark()) >= 0)
  end)

  it("pp.now() (nanoseconds) is not a start where the clock counts ticks", function()
    if pp.clock().tsc_ghz == 0 then
      return pending("no calibrated TSC here: every clock counts nanoseconds, so pp.now() is a start")
    end
    local home = pp.clock().name
    assert.is_true(pp.select_clock("tsc"))
    pp.begin()
    local err = raises("not a start from phaseprobe.mark()", pp.lap, "ptx", pp.now())
    assert.truthy(tostring(err):find("pp.now() is in ns", 1, true), tostring(err))
    local r = pp.emit()
    assert.are.equal(0, r.ptx_ns)
    pp.select_clock(home)
  end)
end)

describe("switches", function()
  before_each(fresh)
  after_each(function() pp.enable(); pp.store.enable(true) end)

  it("enable and store.enable take a boolean, never a number that reads as true", function()
    raises("bad argument #1", pp.enable, 0)
    raises("bad argument #1", pp.enable, "no")
    raises("bad argument #1", pp.store.enable, 0)
    pp.enable(false)
    assert.is_false(pp.enabled())
    pp.enable(true)
    assert.is_true(pp.enabled())
    pp.enable()
    assert.is_true(pp.enabled())
  end)
end)

describe("names and switches everywhere", function()
  before_each(fresh)

  it("phase_ns checks its name whether or not a dispatch is open", function()
    raises("unknown phase 'bogus'", pp.phase_ns, "bogus")
    assert.are.equal(0, pp.phase_ns("ptx"))
  end)

  it("schema{use=} takes a boolean", function()
    raises("field 'use' must be a boolean", pp.schema, { prefix = "usetest", phases = { "a" }, use = 0 })
  end)
end)

describe("option tables", function()
  before_each(fresh)

  it("a schema definition with an unknown field is refused, naming it", function()
    raises("unknown field 'nestd'", pp.schema, { phases = { "a" }, nestd = { "b" }, use = false })
  end)

  it("counts take string names", function()
    pp.begin()
    raises("count names are strings", pp.counts, { 5 })
    pp.emit()
  end)
end)

describe("embedded NULs in pp.cuda names, paths and options (fake driver)", function()
  local sub = require "helpers.cuda_sub"
  if not sub.fake_ready() then
    pending("needs the CUDA headers at build time and build/libfakecuda.so")
    return
  end

  it("are refused, never cut", function()
    local r = sub.run({ PHASEPROBE_LIBCUDA = sub.fake, PHASEPROBE_FAKE_FAULTS = false }, [[
      local ctx = assert(cu.context(0))
      local mod = ctx:load_file("examples/kernels/saxpy.ptx")
      try("func", function() return mod:func("saxpy\0x") end)
      try("global", function() return mod:global("counter\0x") end)
      try("load_file", function() return ctx:load_file("examples/kernels/saxpy.ptx\0x") end)
      try("load_option", function() return ctx:load_file("examples/kernels/saxpy.ptx", { ["max_bytes\0x"] = 1 }) end)
      try("download_type", function()
        local b = ctx:alloc(16)
        return b:download("u32\0x", 4)
      end)
      try("kernel_source", function() return ctx:kernel_source("cupti\0x") end)
      local fn = mod:func("saxpy")
      try("launch_option", function()
        return fn:launch { grid = 1, block = 1, args = { 1, 2.0, ctx:alloc(8), ctx:alloc(8) }, ["fence\0x"] = true }
      end)
      -- a field looked up with a NUL finds no field of the cut name
      try("ctx_field", function() return ctx["closed\0x"] end)
      try("module_field", function() return mod["closed\0x"] end)
      try("function_field", function() return fn["closed\0x"] end)
      try("buffer_field", function() return ctx:alloc(8)["size\0x"] end)
      try("stream_field", function() return ctx:stream()["default\0x"] end)
      try("calibrate_source", function() return ctx:calibrate_events { samples = 2, source = "event\0x" } end)
    ]])
    assert(r._status, r._output)
    for _, k in ipairs { "func", "global", "load_file", "load_option", "download_type", "kernel_source", "launch_option",
                         "ctx_field", "module_field", "function_field", "buffer_field", "stream_field",
                         "calibrate_source" } do
      assert.truthy(r[k] and r[k]:find("NUL", 1, true), k .. ": " .. tostring(r[k]) .. "\n" .. r._output)
    end
  end)
end)

describe("embedded NULs in pp.ptx and pp.parse names, paths and options", function()
  local function nul(f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok, "accepted")
    assert.truthy(tostring(err):find("NUL", 1, true), tostring(err))
  end
  local LINE = "vyre-cuda-dispatch-phase seq=1 nodes=3 wall_ns=10 ptx_ns=4\n"

  it("a PTX file path, and a scan option name", function()
    nul(pp.ptx.scan_file, "examples/kernels/saxpy.ptx\0x")
    nul(pp.ptx.scan, ".version 8.0\n", { ["max_line\0x"] = 1 })
    nul(pp.ptx.scan_file, "examples/kernels/saxpy.ptx", { ["max_bytes\0x"] = 1 })
  end)

  it("a log path, and a column name", function()
    nul(pp.parse.file, "examples/data/demo-h200.log\0x")
    local cols = pp.parse.string(LINE)
    nul(cols.values, cols, "nodes\0x")
    nul(cols.summary, cols, "ptx_ns\0x")
    local p = pp.parse.new()
    nul(p.file, p, "examples/data/demo-h200.log\0x")
    nul(p.string, p, LINE, "run\0.log")
  end)

  it("a parser's prefixes and numeric fields", function()
    nul(pp.parse.new, { prefix = "rec\0x" })
    nul(pp.parse.new, { prefix = { "vyre-cuda-dispatch-phase", "rec\0x" } })
    nul(pp.parse.new, { numeric = { "a\0b" } })
    nul(pp.parse.new, { numeric = "a\0b" })
    nul(pp.parse.string, LINE, { prefix = "vyre-cuda-dispatch-phase\0junk" })
    nul(pp.parse.string, LINE, { source = "run\0.log" })
  end)

  it("a prefix given to pp.records.read", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write(LINE)
    f:close()
    nul(pp.records.read, path, { prefix = "vyre-cuda-dispatch-phase\0junk" })
    os.remove(path)
  end)

  it("the options of pp.parse.list and of a column query", function()
    nul(pp.parse.list, { { seq = 1 } }, { text = "line\0x" })
    nul(pp.parse.list, { { { "a", "x", "token\0x" } } })
    nul(pp.parse.list, { { seq = 1 } }, { prefix = "rec\0x" })
    local cols = pp.parse.string(LINE)
    nul(cols.values, cols, "nodes", nil, "text\0x")
  end)
end)
