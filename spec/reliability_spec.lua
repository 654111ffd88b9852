-- Reliability of the core: many threads at once, sinks that fail, and misuse
-- from Lua that must raise a clear error and never crash.
local pp = require "phaseprobe"
-- the interpreter for child processes (make tsan runs them in its own)
local LUA = os.getenv("PHASEPROBE_LUA") or "lua5.4"
local files = require "helpers.files"

local shell = require "helpers.shell"

local function run(cmd)
  local ok, out, code = shell.run(cmd)
  return out, ok, code
end

-- Runs build/threads_helper ARGS: its summary line must begin with
-- "ok " .. summary (the first line when nothing is said), and the notice
-- (a pattern), when given, must be said exactly once.
local function threads(args, summary, notice)
  local out, ok = run("build/threads_helper " .. args .. " 2>&1")
  local at = out:find("ok " .. summary, 1, true)
  assert.truthy(at, out)
  if notice then
    local _, n = out:gsub(notice, "")
    assert.are.equal(1, n, out)
  else
    assert.are.equal(1, at, out)
  end
  assert.is_true(ok)
end

describe("threads", function()
  it("8 C threads x 100k dispatches: every record is exactly its thread's, nothing lost", function()
    threads("8 100000 1000000", "threads=8 records=800000 stored=800000 dropped=0 emitted=800000 bad=0")
  end)

  it("with a store too small, stored + dropped == emitted and the drop is said once", function()
    threads("8 100000 50000", "threads=8 records=800000 stored=50000 dropped=750000 emitted=800000 bad=0",
      "record store full")
  end)
end)

describe("the store keeping the last records, 8 threads", function()
  it("holds each thread's last records, contiguous; stored + dropped == emitted", function()
    threads("8 20000 50000 last", "threads=8 records=160000 stored=50000 dropped=110000 emitted=160000 bad=0",
      "record store full %(50000 records%): keeping the last 50000")
  end)
end)

describe("failing sinks", function()
  before_each(function()
    pp.use(pp.default_schema())
    pp.enable()
    pp.store.enable(true)
    pp.store.capacity(100000)
    pp.store.clear()
  end)
  after_each(function() pp.sink("none") end)

  it("a closed descriptor is refused with nil and a message; the sink and the records stay", function()
    local path = os.tmpname()
    assert.is_true(pp.sink(path))
    -- a descriptor number far above anything open in this process
    local ok, err = pp.sink(1000)
    assert.is_nil(ok)
    assert.equal("phaseprobe.sink: descriptor 1000: Bad file descriptor", err)
    for i = 1, 3 do pp.begin(); pp.add_ns("ptx", i); pp.emit { seq = i } end
    pp.sink("none")
    assert.equal(3, select(2, files.slurp(path):gsub("\n", "")))
    os.remove(path)
    assert.are.equal(3, pp.store.count())
    assert.are.equal(2, pp.store.get(2).ptx_ns)
  end)

  it("/dev/full reports the failure once on stderr, in a separate process", function()
    local script = [[
      package.cpath = "./?.so;" .. package.cpath
      local pp = require "phaseprobe"
      pp.enable(); pp.sink("/dev/full")
      for i = 1, 50 do pp.begin(); pp.emit{seq = i} end
      pp.flush()
      local st = pp.stats()
      print("failures=" .. st.line_failures .. " stored=" .. st.stored)
    ]]
    local out, ok = run(LUA .. " -e '" .. script:gsub("'", "'\\''") .. "' 2>&1")
    assert.is_true(ok)
    assert.truthy(out:find("failures=50 stored=50", 1, true), out)
    local _, n = out:gsub("phaseprobe: record lines to /dev/full", "")
    assert.are.equal(1, n)
  end)
end)

describe("misuse from Lua raises, never crashes", function()
  before_each(function()
    pp.use(pp.default_schema())
    pp.enable()
    pp.sink("none")
  end)
  after_each(function()
    if pp.is_open() then pp.emit { wall_ns = 0 } end
  end)

  local cases = {
    { "measure without a function", function() pp.begin(); pp.measure("ptx", 42) end, "function expected" },
    { "phase name of the wrong type", function() pp.begin(); pp.add_ns({}, 1) end, "string (a phase name) expected, got table" },
    { "add_ns with a float", function() pp.begin(); pp.add_ns("ptx", 1.5) end, "number has no integer representation" },
    { "add_ns with a string", function() pp.begin(); pp.add_ns("ptx", "x") end, "number expected" },
    { "counts with a non-table", function() pp.begin(); pp.counts(5) end, "table expected" },
    { "count of the wrong type", function() pp.begin(); pp.counts { nodes = "many" } end, "count 'nodes' must be a non-negative integer" },
    { "kernel_ns with a bad source", function() pp.begin(); pp.kernel_ns(5, "guess") end, "invalid option 'guess'" },
    { "emit with a bad field", function() pp.begin(); pp.emit { wall_ns = -3 } end, "field 'wall_ns' must be a non-negative integer" },
    { "emit with a non-table", function() pp.begin(); pp.emit(7) end, "table expected" },
    { "use with a non-schema", function() pp.use({}) end, "phaseprobe.schema expected" },
    { "schema list of non-strings", function() pp.schema { phases = { 1, 2 } } end, "phases[1] must be a string" },
    { "store capacity negative", function() pp.store.capacity(-1) end, "capacity must not be negative" },
    { "unknown cache", function() pp.begin(); pp.cache("module", "hit") end, "unknown cache 'module'" },
    { "unknown clock", function() pp.select_clock("sundial") end, "invalid option 'sundial'" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local ok, err = pcall(c[2])
      assert.is_false(ok)
      assert.truthy(tostring(err):find(c[3], 1, true), tostring(err))
    end)
  end

  it("scopes nested deeper than the stack raise instead of overflowing it", function()
    pp.begin()
    local function deep(n)
      local _ <close> = pp.phase("ptx")
      if n > 0 then return deep(n - 1) end
    end
    local ok, err = pcall(deep, 100)
    assert.is_false(ok)
    assert.truthy(err:find("more than 64 scopes open at once", 1, true))
    -- the scopes that did open were all closed and charged
    assert.is_true(pp.emit().ptx_ns > 0)
  end)
end)

describe("Lua states in threads", function()
  it("two threads, each with its own Lua state, keep their records apart", function()
    local out, ok = run("build/multi_state 2 spec/fixtures/scripts/multi_state_probe.lua 2>&1")
    assert.is_true(ok, out)
    assert.truthy(out:find("thread 0: mine=20000 wrong=0", 1, true), out)
    assert.truthy(out:find("thread 1: mine=20000 wrong=0", 1, true), out)
  end)
end)
