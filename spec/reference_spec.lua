-- Fidelity to the reference probe (../shared/reference/dispatch_phase_probe.rs):
-- a caller that uses only the reference's calls (charges, counts, kernel
-- time, then emit with its own wall and cache values, no begin) gets the
-- reference's behaviour and line; pp.begin/pp.finish are our addition.
local pp = require "phaseprobe"
local shell = require "helpers.shell"
local probe = require "helpers.probe"
local fresh, raises = probe.fresh, probe.raises
local LUA = os.getenv("PHASEPROBE_LUA") or "lua5.4"

-- Some cases leave a dispatch open on purpose (one that raised) and begin
-- the next: the probe's notice of the drop is for a user, not the test run.
setup(function() pp.notices("none") end)
teardown(function() pp.notices("stderr") end)

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

  it("an unknown field's error names it and lists the valid fields", function()
    pp.begin()
    local valid = "(valid: seq, wall_ns, enqueue_ns, wait_ns, device_window_ns, ptx_cache_hits, "
      .. "ptx_cache_misses, ptx_cache_disk_hits)"
    raises("unknown field 'foo' " .. valid, pp.emit, { foo = 1, wall_ns = 1 })
    raises("unknown field 'foo' " .. valid, pp.emit, { foo = 1 })
    raises("unknown field '1' " .. valid, pp.emit, { 7 })
    raises("unknown field 'seq' (it contains a NUL byte) " .. valid, pp.emit, { ["seq\0x"] = 1 })
    pp.schema { prefix = "mine", phases = { "plan" }, caches = { "pso" } }
    pp.begin()
    raises("unknown field 'foo' (valid: seq, wall_ns, enqueue_ns, wait_ns, device_window_ns, "
      .. "pso_cache_hits, pso_cache_misses, pso_cache_disk_hits)", pp.emit, { foo = 1 })
    pp.use(pp.default_schema())
  end)
end)

describe("from C", function()
  it("the reference's calls, the emit mask, cache values, the older form, tags and the environment", function()
    shell.checks_pass("env -u PHASEPROBE -u VYRE_CUDA_DISPATCH_PHASE_PROBE build/record_helper 2>&1", {
      "charges then emit, no pp_begin", "an emit with nothing charged prints zeros",
      "named above a caller's wall prints as the reference prints it",
      "seq = UINT64_MAX is a value", "every field UINT64_MAX when given",
      "fields not given are the probe's", "the older form: PP_AUTO marks automatic fields",
      "the older form: {.seq = n} after a measured dispatch keeps the measured wall",
      "the older form: {.seq = n} keeps a recorded device window",
      "the older form: a non-zero value is given, a zero seq is the counter's",
      "explicit cache values override the dispatch's events", "a cache not given keeps its events",
      "a tag that another thread's schema made a field",
      "a start that is not a mark is counted and charges nothing",
      "the environment is read at load, and again by pp_enable_from_env",
      "pp_clock_select refuses while this thread has a dispatch or a scope open",
    })
  end)
end)

describe("the environment", function()
  local run = probe.enabled_with

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

-- The reference's own line for the same inputs, byte for byte up to
-- ptx_cache_misses. The reference (dispatch_phase_probe.rs) is compiled with
-- rustc as it is, beside a stand-in for the two vyre_foundation items it
-- uses (spec/helpers/reference/), and driven by the same scripts as ours:
-- charges, counts, kernel time, nested regions, emit arguments with cache
-- values, zero dispatches, saturation. Its source stays outside the
-- repository: it is read from $PHASEPROBE_REFERENCE, or from
-- ../shared/reference/ beside the checkout; without it, or without rustc,
-- the spec is pending and says why, unless the environment says it must
-- run: PHASEPROBE_REFERENCE_REQUIRED=1, or PHASEPROBE_REFERENCE naming a
-- file that is not there. Then it fails.
local REF_DIR = "build/reference"
local U64_MAX = "18446744073709551615"

local sh = shell.run

local function readable(path)
  local f = path and io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- rustc and the reference's driver run without the sanitizer runtimes that
-- make asan preloads into this process (and so into its children).
local PLAIN = "env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS "

local function find_rustc()
  local ok, out = sh("command -v rustc")
  if ok and out:match("%S") then return (out:gsub("%s+$", "")) end
  local home = os.getenv("HOME")
  if home and readable(home .. "/.cargo/bin/rustc") then return home .. "/.cargo/bin/rustc" end
  return nil
end

local DEFAULT_SOURCE = "../shared/reference/dispatch_phase_probe.rs"

-- Where the reference's source is, by the environment (getenv), and
-- whether the spec must run: the path, or nil, why, must (true when a
-- missing source or rustc fails the spec rather than leaving it pending).
local function reference_source(getenv, is_readable)
  local named = getenv("PHASEPROBE_REFERENCE")
  local must = getenv("PHASEPROBE_REFERENCE_REQUIRED") == "1" or (named ~= nil and named ~= "")
  local src = (named ~= nil and named ~= "") and named or DEFAULT_SOURCE
  if is_readable(src) then return src, nil, must end
  if named ~= nil and named ~= "" then
    return nil, "PHASEPROBE_REFERENCE names " .. src .. ", which cannot be read", true
  end
  return nil, "the reference's source is not here (" .. src .. "): set PHASEPROBE_REFERENCE "
    .. "to dispatch_phase_probe.rs, or check out beside shared/reference/", must
end

-- Builds build/reference/driver from the reference; nil, why, must when it
-- cannot.
local built
local function reference_driver()
  if built ~= nil then return built[1], built[2], built[3] end
  local src, why, must = reference_source(os.getenv, readable)
  if not src then
    built = { nil, why, must }
    return nil, why, must
  end
  local rustc = find_rustc()
  if not rustc then
    built = { nil, "no rustc on PATH or in ~/.cargo/bin to compile the reference", must }
    return nil, built[2], must
  end
  os.execute("mkdir -p " .. REF_DIR)
  -- the reference without its first line, which names the crate
  local text = assert(io.open(src, "rb")):read("a")
  local body = text:gsub("^[^\n]*\n", "", 1):gsub("^\n", "", 1)
  local old = io.open(REF_DIR .. "/probe.rs", "rb")
  local same = old and old:read("a") == body
  if old then old:close() end
  if not same then
    local f = assert(io.open(REF_DIR .. "/probe.rs", "wb"))
    f:write(body)
    f:close()
  end
  if not same or not readable(REF_DIR .. "/driver") then
    local flags = "--edition 2021 -O -C overflow-checks=off"
    local ok, out = sh(("cp spec/helpers/reference/driver.rs spec/helpers/reference/vyre_foundation.rs %s/ && "
      .. "cd %s && %s%s %s --crate-type rlib --crate-name vyre_foundation vyre_foundation.rs "
      .. "-o libvyre_foundation.rlib && %s%s %s --extern vyre_foundation=libvyre_foundation.rlib "
      .. "driver.rs -o driver"):format(REF_DIR, REF_DIR, PLAIN, rustc, flags, PLAIN, rustc, flags))
    if not ok then
      os.remove(REF_DIR .. "/driver")
      error("the reference did not compile:\n" .. out)
    end
  end
  built = { PLAIN .. REF_DIR .. "/driver" }
  return built[1]
end

local function run_with(cmd, script)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(script)
  f:close()
  local ok, out = sh(cmd .. " < " .. path)
  os.remove(path)
  assert(ok, cmd .. " failed:\n" .. out)
  local lines = {}
  for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
  return lines
end

local PHASE_NAMES = { "prepare", "ptx", "modkey", "stage", "resolve", "lease", "launch", "release", "readback" }

-- A script of n dispatches. big: values anywhere in u64 (the C API takes
-- them; Lua integers stop at 2^63 - 1), else below 2^62.
local function script(n, seed, big)
  math.randomseed(seed)
  local R = math.random
  local function val(limit)
    local k = R(10)
    if k <= 2 then return "0" end
    if k <= 5 then return tostring(R(1, 100000)) end
    if k <= 8 then return tostring(R(1, 1 << 40)) end
    if big and k == 10 and not limit then
      return ({ U64_MAX, "18446744073709551614", "9223372036854775808" })[R(3)]
    end
    return tostring(R(1, limit or (1 << 62)))
  end
  local out = {}
  local function put(...) out[#out + 1] = table.concat({ ... }, " ") end
  for d = 1, n do
    local kind = R(12)
    if kind == 1 then
      -- nothing charged: a line of zeros
      put("emit", d, 0, 0, 0, "-", 0, 0)
    elseif kind == 2 then
      -- one phase saturated (the sum stays at the maximum)
      local p = PHASE_NAMES[R(#PHASE_NAMES)]
      put("add", p, big and U64_MAX or tostring(math.maxinteger))
      put("add", p, big and U64_MAX or tostring(math.maxinteger))
      put("emit", d, val(), val(), val(), "-", val(), val())
    else
      for _, p in ipairs(PHASE_NAMES) do
        -- below 2^59, so nine phases charged twice cannot overflow the sum
        for _ = 1, R(0, 2) do put("add", p, val(1 << 59)) end
      end
      for _, r in ipairs { "ptx_digest", "ptx_vsa" } do
        if R(4) == 1 then put("nested", r, R(0, 2000)) end
      end
      if R(5) > 1 then
        local grid = big and { R(0, 0xffffffff), R(0, 0xffffffff), R(0, 0xffffffff) } or { R(0, 4096), R(1, 64), R(1, 4) }
        put("counts", R(0, 3000), val(), val(), val(), val(), grid[1], grid[2], grid[3])
      end
      if R(3) > 1 then put("kernel", val()) end
      -- a wall below the charges now and then: the residue saturates at 0
      local wall = R(4) == 1 and tostring(R(0, 1000)) or val()
      put("emit", val(), wall, val(), val(), R(3) == 1 and "-" or val(), val(), val())
    end
  end
  return table.concat(out, "\n") .. "\n"
end

-- The reference's nested regions are timed: ours is given, per dispatch,
-- the time the reference measured for each.
local function ours_script(s, ref_lines)
  local out, d, pending = {}, 1, {}
  for line in s:gmatch("[^\n]+") do
    local w = {}
    for x in line:gmatch("%S+") do w[#w + 1] = x end
    if w[1] == "nested" then
      pending[w[2]] = true
    else
      if w[1] == "emit" then
        for r in pairs(pending) do
          local v = assert(ref_lines[d]:match(" sub_" .. r .. "_ns=(%d+)"), "no sub_" .. r)
          out[#out + 1] = "nested " .. r .. " " .. v
        end
        pending, d = {}, d + 1
      end
      out[#out + 1] = line
    end
  end
  return table.concat(out, "\n") .. "\n"
end

-- Our line up to ptx_cache_misses must be the reference's, byte for byte,
-- and go on with our own fields.
local function same_prefix(ref, ours, where)
  local head = ours:sub(1, #ref)
  local rest = ours:sub(#ref + 1, #ref + 1)
  if head ~= ref or (rest ~= "" and rest ~= " ") then
    error(("%s:\nreference: %s\nours:      %s"):format(where, ref, ours), 0)
  end
end

-- One seed's lines, ours against the reference's: as many, each the same up
-- to ptx_cache_misses.
local function same_lines(ref, ours, seed)
  assert.are.equal(#ref, #ours)
  for i = 1, #ref do same_prefix(ref[i], ours[i], ("seed %d, dispatch %d"):format(seed, i)) end
end

-- Drives pp.* (the Lua API) with a script.
local function lua_lines(s)
  pp.use(pp.default_schema())
  pp.enable()
  pp.sink("none")
  if pp.is_open() then pp.emit { wall_ns = 0 } end
  local out = {}
  for line in s:gmatch("[^\n]+") do
    local w = {}
    for x in line:gmatch("%S+") do w[#w + 1] = x end
    local n = function(i) return math.tointeger(tonumber(w[i])) end
    if w[1] == "add" then
      pp.add_ns(w[2], n(3))
    elseif w[1] == "nested" then
      pp.add_nested_ns(w[2], n(3))
    elseif w[1] == "counts" then
      pp.counts { nodes = n(2), ptx_bytes = n(3), buffers = n(4), bindings = n(5), fixpoint = n(6),
                  grid_blocks = n(7) * n(8) * n(9) }
    elseif w[1] == "kernel" then
      pp.kernel_ns(n(2))
    elseif w[1] == "emit" then
      out[#out + 1] = tostring(pp.emit { seq = n(2), wall_ns = n(3), enqueue_ns = n(4), wait_ns = n(5),
        device_window_ns = w[6] ~= "-" and n(6) or nil, ptx_cache_hits = n(7), ptx_cache_misses = n(8) })
    end
  end
  return out
end

-- The driver, or nil after marking the test pending; raises where the
-- environment says the spec must run.
local function need_driver()
  local driver, why, must = reference_driver()
  if driver then return driver end
  if must then
    error("the reference spec must run here (PHASEPROBE_REFERENCE_REQUIRED=1 or "
      .. "PHASEPROBE_REFERENCE set), but: " .. why, 0)
  end
  pending(why)
  return nil
end

describe("whether the reference's own line is checked", function()
  local function env(t) return function(k) return t[k] end end
  local function readable_only(path) return function(p) return p == path end end

  it("pends without the source when nothing asks for it", function()
    local src, why, must = reference_source(env {}, readable_only(nil))
    assert.is_nil(src)
    assert.truthy(why:find("not here", 1, true), why)
    assert.is_false(must)
    src, why, must = reference_source(env { PHASEPROBE_REFERENCE = "" }, readable_only(nil))
    assert.is_nil(src)
    assert.is_false(must)
  end)

  it("fails where PHASEPROBE_REFERENCE names a file that is not there", function()
    local src, why, must = reference_source(env { PHASEPROBE_REFERENCE = "/nowhere/probe.rs" },
      readable_only(DEFAULT_SOURCE))
    assert.is_nil(src)
    assert.truthy(why:find("/nowhere/probe.rs", 1, true), why)
    assert.is_true(must)
  end)

  it("fails without the source, or without rustc, where PHASEPROBE_REFERENCE_REQUIRED=1", function()
    local src, _, must = reference_source(env { PHASEPROBE_REFERENCE_REQUIRED = "1" }, readable_only(nil))
    assert.is_nil(src)
    assert.is_true(must)
    -- with the source: it runs, and a missing rustc is then a failure too
    src, _, must = reference_source(env { PHASEPROBE_REFERENCE_REQUIRED = "1" }, readable_only(DEFAULT_SOURCE))
    assert.are.equal(DEFAULT_SOURCE, src)
    assert.is_true(must)
  end)

  it("runs the named file, or the default beside the checkout", function()
    assert.are.equal("/x/probe.rs",
      (reference_source(env { PHASEPROBE_REFERENCE = "/x/probe.rs" }, readable_only("/x/probe.rs"))))
    local src, _, must = reference_source(env {}, readable_only(DEFAULT_SOURCE))
    assert.are.same({ DEFAULT_SOURCE, false }, { src, must })
  end)

  it("fails the whole spec where the environment asks for a source that is not there", function()
    if os.getenv("PHASEPROBE_REFERENCE_NESTED") then return end
    local ok, out = sh("env PHASEPROBE_REFERENCE_NESTED=1 PHASEPROBE_REFERENCE=/nowhere/probe.rs "
      .. LUA .. " spec/run.lua --filter=\"the reference's own line\" spec/reference_spec.lua")
    assert.is_false(ok, out)
    assert.truthy(out:find("/nowhere/probe.rs", 1, true), out)
    assert.truthy(out:find("0 pending", 1, true), out)
  end)
end)

describe("the reference's own line", function()
  local env = "env VYRE_CUDA_DISPATCH_PHASE_PROBE=1 "

  -- The reference and ours (run(script) -> lines) on a script of n
  -- dispatches for each seed (big: values over the whole u64 range), line
  -- for line.
  local function same_as_reference(seeds, n, big, run)
    local driver = need_driver()
    if not driver then return end
    for _, seed in ipairs(seeds) do
      local s = script(n, seed, big)
      local ref = run_with(env .. driver, s)
      assert.are.equal(n, #ref)
      same_lines(ref, run(ours_script(s, ref)), seed)
    end
  end

  it("for the same inputs, from C: byte for byte up to ptx_cache_misses, over the whole u64 range", function()
    same_as_reference({ 1, 2, 3 }, 400, true, function(s) return run_with("build/script_probe", s) end)
  end)

  it("for the same inputs, from Lua: byte for byte up to ptx_cache_misses", function()
    same_as_reference({ 4, 5 }, 300, false, lua_lines)
  end)

  it("where the reference's named_host_ns overflows, it wraps; ours saturates (a stated difference)", function()
    local driver = need_driver()
    if not driver then return end
    local s = "add prepare 9223372036854775808\nadd ptx 9223372036854775808\nadd stage 5\n"
      .. "emit 1 1000 0 0 - 0 0\n"
    local ref = run_with(env .. driver, s)[1]
    local ours = run_with("build/script_probe", s)[1]
    -- the reference: the sum wraps to 5, and the residue reads 995
    assert.truthy(ref:find(" named_host_ns=5 unattributed_ns=995 ", 1, true), ref)
    assert.truthy(ours:find(" named_host_ns=" .. U64_MAX .. " unattributed_ns=0 ", 1, true), ours)
    -- and nothing else differs
    local function without(l) return (l:gsub(" named_host_ns=%d+ unattributed_ns=%d+", "")) end
    same_prefix(without(ref), without(ours), "outside named_host_ns and unattributed_ns")
  end)
end)
