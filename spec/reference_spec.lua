-- Fidelity to the reference probe (../shared/reference/dispatch_phase_probe.rs):
-- a caller that uses only the reference's calls (charges, counts, kernel
-- time, then emit with its own wall and cache values, no begin) gets the
-- reference's behaviour and line; pp.begin/pp.finish are our addition.
local pp = require "phaseprobe"
local LUA = os.getenv("PHASEPROBE_LUA") or "lua5.4"

local function fresh()
  pp.use(pp.default_schema())
  pp.enable()
  pp.sink("none")
  pp.store.enable(true)
  pp.store.clear()
  if pp.is_open() then pp.emit { wall_ns = 0 } end
end

local function raises(pattern, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "accepted: expected an error matching " .. pattern)
  assert.truthy(tostring(err):find(pattern, 1, true), tostring(err))
end

describe("the reference's calls alone", function()
  before_each(fresh)

  it("charges made without pp.begin land in the next emit, with the caller's wall", function()
    pp.add_ns("prepare", 700)
    pp.add_ns("launch", 300)
    pp.counts { nodes = 12 }
    pp.kernel_ns(55)
    local r = pp.emit { seq = 9, wall_ns = 5000 }
    assert.are.equal(700, r.prepare_ns)
    assert.are.equal(1000, r.named_host_ns)
    assert.are.equal(4000, r.unattributed_ns)
    assert.are.equal(12, r.nodes)
    assert.are.equal(55, r.kernel_ns)
    -- and they are gone from the next one
    local r2 = pp.emit { seq = 10, wall_ns = 1 }
    assert.are.equal(0, r2.named_host_ns)
  end)

  it("every emit prints a line, zeros included", function()
    local r = pp.emit { seq = 0, wall_ns = 0 }
    assert.truthy(tostring(r):find("^vyre%-cuda%-dispatch%-phase seq=0 nodes=0 "))
    assert.truthy(tostring(r):find(" wall_ns=0 ", 1, true))
    assert.truthy(tostring(r):find(" named_host_ns=0 unattributed_ns=0 ptx_cache_hits=0 ptx_cache_misses=0", 1, true))
    assert.are.equal(1, pp.store.count())
  end)

  it("named above the caller's wall prints as the reference prints it", function()
    pp.add_ns("ptx", 9000)
    local r = pp.emit { wall_ns = 100 }
    assert.truthy(tostring(r):find(" wall_ns=100 ", 1, true))
    assert.truthy(tostring(r):find(" named_host_ns=9000 unattributed_ns=0 ", 1, true))
  end)

  it("scopes without pp.begin charge the next emit", function()
    do
      local _ <close> = pp.phase("stage")
      local t0 = pp.now()
      while pp.now() - t0 < 100000 do end
    end
    local r = pp.emit { wall_ns = 1000000000 }
    assert.is_true(r.stage_ns >= 100000)
  end)

  it("an emit without pp.begin and without wall_ns is refused (no wall was measured)", function()
    raises("no wall time", pp.emit)
    raises("no wall time", pp.emit, { seq = 3 })
  end)
end)

describe("cache values given to emit", function()
  before_each(fresh)

  it("override the dispatch's cache events, as the reference's emit takes them", function()
    pp.begin()
    pp.cache("ptx", "hit")
    pp.cache("ptx", "miss")
    local r = pp.emit { ptx_cache_hits = 5, ptx_cache_misses = 2 }
    assert.are.equal(5, r.ptx_cache_hits)
    assert.are.equal(2, r.ptx_cache_misses)
    assert.truthy(tostring(r):find(" ptx_cache_hits=5 ptx_cache_misses=2 ", 1, true))
  end)

  it("one given, the other from the events", function()
    pp.begin()
    pp.cache("ptx", "hit")
    pp.cache("ptx", "miss")
    pp.cache("ptx", "disk_hit")
    local r = pp.emit { ptx_cache_hits = 0 }
    assert.are.equal(0, r.ptx_cache_hits)
    assert.are.equal(1, r.ptx_cache_misses)
    assert.are.equal(1, r.ptx_cache_disk_hits)
    r = (function() pp.begin(); pp.cache("ptx", "disk_hit"); return pp.emit { ptx_cache_disk_hits = 4 } end)()
    assert.are.equal(1, r.ptx_cache_hits)
    assert.are.equal(4, r.ptx_cache_disk_hits)
  end)

  it("name the schema's own caches", function()
    pp.schema { prefix = "mine", phases = { "plan" }, caches = { "plan", "pso" } }
    pp.begin()
    local r = pp.emit { plan_cache_hits = 3, pso_cache_misses = 4 }
    assert.are.equal(3, r.plan_cache_hits)
    assert.are.equal(4, r.pso_cache_misses)
    pp.begin()
    raises("unknown field 'ptx_cache_hits'", pp.emit, { ptx_cache_hits = 1 })
    pp.use(pp.default_schema())
  end)

  it("must be non-negative integers", function()
    pp.begin()
    raises("field 'ptx_cache_hits' must be a non-negative integer", pp.emit, { ptx_cache_hits = -1 })
    raises("field 'ptx_cache_misses' must be a non-negative integer", pp.emit, { ptx_cache_misses = 1.5 })
    raises("unknown field 'ptx_cache_hit'", pp.emit, { ptx_cache_hit = 1 })
    pp.emit()
  end)
end)

describe("from C", function()
  it("the reference's calls, the emit mask, cache values, the older form, tags and the environment", function()
    local p = io.popen("env -u PHASEPROBE -u VYRE_CUDA_DISPATCH_PHASE_PROBE build/record_helper 2>&1")
    local out = p:read("a")
    local ok = p:close()
    assert.is_nil(out:find("FAIL", 1, true), out)
    for _, case in ipairs {
      "charges then emit, no pp_begin", "an emit with nothing charged prints zeros",
      "named above a caller's wall prints as the reference prints it",
      "seq = UINT64_MAX is a value", "every field UINT64_MAX when given",
      "fields not given are the probe's", "the older form: PP_AUTO marks automatic fields",
      "explicit cache values override the dispatch's events", "a cache not given keeps its events",
      "a tag that another thread's schema made a field",
      "the environment is read at load, and again by pp_enable_from_env",
    } do
      assert.truthy(out:find("ok " .. case .. "\n", 1, true), case .. "\n" .. out)
    end
    assert.is_true(ok, out)
  end)
end)

describe("the environment", function()
  local function run(env)
    local p = io.popen(env .. " " .. LUA .. " -e 'package.cpath=\"./?.so;\"..package.cpath; print(require(\"phaseprobe\").enabled())'")
    local out = p:read("a")
    p:close()
    return out:match("%a+")
  end

  it("the reference's variable enables on its presence, whatever its value", function()
    assert.are.equal("true", run("env -u PHASEPROBE VYRE_CUDA_DISPATCH_PHASE_PROBE=0"))
    assert.are.equal("true", run("env -u PHASEPROBE VYRE_CUDA_DISPATCH_PHASE_PROBE="))
  end)

  it("PHASEPROBE, when set, decides: 0 or empty is off, anything else on", function()
    assert.are.equal("false", run("env PHASEPROBE= VYRE_CUDA_DISPATCH_PHASE_PROBE=1"))
    assert.are.equal("false", run("env PHASEPROBE=0 VYRE_CUDA_DISPATCH_PHASE_PROBE=1"))
    assert.are.equal("true", run("env -u VYRE_CUDA_DISPATCH_PHASE_PROBE PHASEPROBE=yes"))
  end)
end)
