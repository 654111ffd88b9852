-- Records and the printable result tables under misuse: a record prints
-- byte for byte as its line however long, and prints any value without
-- calling into it; its field list is read-only; the metatables of its
-- layouts are not kept forever; a printable table prints any table. Split
-- out of spec/safety_spec.lua (the module's other misuse and
-- hostile-argument cases), with the same helpers (helpers/isolated.lua):
-- a case that crashed runs in its own interpreter, so that a crash fails
-- the case instead of the whole run.
local pp = require "phaseprobe"
local files = require "helpers.files"
local isolated = require "helpers.isolated"
local sub, clean = isolated.run, isolated.clean

describe("a record's field list cannot be written through it (#12 defect 8)", function()
  it("r._fields is read-only; tostring(r) is unaffected by attempts", function()
    local r = clean(sub [[
      pp.enable(); pp.sink("none"); pp.begin()
      local rec = pp.emit { seq = 7 }
      local line = tostring(rec)
      try("write", function() rec._fields[1] = {} end)
      try("append", function() rec._fields[#rec._fields + 1] = "x" end)
      report("same", tostring(rec) == line, rec._fields[1], #rec._fields == #pp.default_schema().fields)
      local c = pp.parse.string("p a=1 b=2\n")
      local row = c:row(1)
      try("row", function() row._fields[1] = {} end)
      report("rowline", tostring(row), table.concat(row._fields, ","))
      local n = 0
      for i, f in ipairs(rec._fields) do n = n + 1 end
      local m = 0
      for k, f in pairs(rec._fields) do m = m + 1 end
      report("iter", n == #rec._fields, m == n)
    ]])
    assert.matches("error: .*read%-only", r.write)
    assert.matches("error: .*read%-only", r.append)
    assert.are.equal("true | seq | true", r.same)
    assert.matches("error: .*read%-only", r.row)
    assert.are.equal("p a=1 b=2 | a,b", r.rowline)
    assert.are.equal("true | true", r.iter)
  end)

  it("records made from tables (and read back from CSV) carry a read-only field list too", function()
    local rec = pp.records.from_list({ { a = 1, b = 2 } }, { prefix = "p" })[1]
    local ok, err = pcall(function() rec._fields[1] = {} end)
    assert.is_false(ok)
    assert.matches("read%-only", err)
    ok, err = pcall(function() rec.a = 5 end)
    assert.is_false(ok)
    assert.matches("records are read%-only", err)
    assert.are.equal("p a=1 b=2", tostring(rec))
  end)
end)

describe("record metatables are not kept forever (#12 defect 13)", function()
  it("layouts leave no lasting memory once their records are gone", function()
    local names = {}
    for i = 1, 14 do names[i] = ("field_%02d"):format(i) end
    local parts = {}
    for i, n in ipairs(names) do parts[i] = n .. "=" .. i end
    local c = pp.parse.string("p " .. table.concat(parts, " ") .. "\n")
    local function layouts(from, to)
      for mask = from, to do
        local list = {}
        for b = 1, 14 do
          if mask & (1 << (b - 1)) ~= 0 then list[#list + 1] = names[b] end
        end
        local r = c:row(1, list)
        assert(r._fields[1] == list[1])
      end
    end
    -- What may last is the cache's own table, sized by the most layouts
    -- alive within one collection cycle (a few hundred KiB at most here);
    -- a metatable kept per layout costs over 500 bytes each.
    layouts(1, 6000)
    collectgarbage(); collectgarbage()
    local before = collectgarbage("count")
    layouts(6001, 16383)
    collectgarbage(); collectgarbage()
    local grew = (collectgarbage("count") - before) * 1024
    assert.is_true(grew < 1024 * 1024, ("%d bytes kept after 10,383 more layouts"):format(math.floor(grew)))
  end)
end)

describe("records print as their line, however long (#12 defect 1)", function()
  it("a parsed record of 60 fields prints byte for byte as its line", function()
    local r = clean(sub [[
      local f = {}
      for i = 1, 60 do f[i] = ("field_%02d_abcdefgh=%d"):format(i, i) end
      local line = "p " .. table.concat(f, " ")
      local c = pp.parse.string(line .. "\n")
      local s = tostring(c:row(1))
      report("same", s == line, #s, #line)
      -- a column view of the same record, and its tags-and-extras path
      local v = c:row(1, { "field_60_abcdefgh", "field_01_abcdefgh" })
      report("view", tostring(v))
    ]])
    assert.are.equal("true | 1252 | 1252", r.same)
    assert.are.equal("p field_60_abcdefgh=60 field_01_abcdefgh=1", r.view)
  end)

  it("records of a 20-phase schema survive pp.records.from_list(pp.store.records())", function()
    local r = clean(sub [[
      local phases = {}
      for i = 1, 20 do phases[i] = "phase_number_" .. i end
      pp.schema { prefix = "wide", phases = phases }
      pp.enable(); pp.sink("none"); pp.store.enable(true); pp.store.clear()
      for i = 1, 5 do
        pp.begin()
        for k = 1, 20 do pp.add_ns(phases[k], i * 1000 + k) end
        pp.emit { seq = i }
      end
      local set = pp.records.from_list(pp.store.records())
      report("n", set:count())
      report("v", set[5].phase_number_20_ns, set[1].phase_number_1_ns)
    ]])
    assert.are.equal("5", r.n)
    assert.are.equal("5020 | 1001", r.v)
  end)

  it("a default-schema record with saturated values and full tags prints as the sink's line", function()
    local log = os.tmpname()
    local r = clean(sub([[
      pp.enable(); pp.sink(]] .. ("%q"):format(log) .. [[)
      for i = 1, 8 do pp.tag("tag_key_" .. i, ("v"):rep(18)) end
      pp.begin()
      for _, ph in ipairs(pp.default_schema().phases) do pp.add_ns(ph, math.maxinteger); pp.add_ns(ph, 5) end
      pp.add_nested_ns("ptx_digest", math.maxinteger)
      pp.counts { nodes = math.maxinteger, ptx_bytes = math.maxinteger }
      pp.kernel_ns(math.maxinteger, "user", math.maxinteger)
      local rec = pp.emit { seq = math.maxinteger, wall_ns = math.maxinteger, enqueue_ns = math.maxinteger,
        wait_ns = math.maxinteger, device_window_ns = math.maxinteger }
      pp.sink("none")
      report("line", tostring(rec))
    ]]))
    local want = files.slurp(log):gsub("\n$", "")
    os.remove(log)
    assert.truthy(#want > 1000, "the line is long: " .. #want)
    assert.are.equal(want, r.line)
  end)
end)

-- Beyond the listed defects: what the sweep over the bindings found.
describe("records print any value without calling into it (#12 sweep)", function()
  it("floats print plainly; booleans and tables never become values, __tostring is not called", function()
    local set = pp.records.from_list({ { a = 1, f = 1.5, g = 3.0 } }, { prefix = "p" })
    assert.are.equal("p a=1 f=1.5 g=3.0", tostring(set[1])) -- a float reads back a float
    assert.are.equal(3.0, set[1].g)
    assert.are.equal("float", math.type(set[1].g))
    local called = false
    local t = setmetatable({}, { __tostring = function() called = true end })
    for _, bad in ipairs { { a = 1, h = true }, { a = 1, t = t } } do
      local ok, err = pcall(pp.records.from_list, { bad }, { prefix = "p" })
      assert.is_false(ok)
      assert.matches("element 1: field '[ht]': a %a+ %(values are integers, numbers or strings%)", err)
    end
    assert.is_false(called)
  end)
end)

describe("the printable result tables print any table (#12 sweep: the API fuzzer)", function()
  it("their __tostring on an empty table, a foreign one, nested empty tables", function()
    local r = clean(sub [[
      local mt = debug.getmetatable(pp.stats())
      report("empty", getmetatable(pp.stats()).__tostring({}))
      report("clock", tostring(setmetatable({}, debug.getmetatable(pp.clock()))))
      report("nested", tostring(setmetatable({ a = {}, b = { {}, {} }, [true] = 1 }, mt)))
      try("number", mt.__tostring, 1)
    ]])
    assert.are.equal("phaseprobe", r.empty)
    assert.are.equal("phaseprobe.clock", r.clock)
    assert.are.equal("phaseprobe.stats\\n  a  (empty)\\n  b\\n    [1] (empty)\\n    [2] (empty)\\n"
      .. "  ... and 1 more entries", r.nested)
    assert.matches("error: .*table expected, got number", r.number)
  end)
end)
