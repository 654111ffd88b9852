-- The record (phaseprobe.record, csrc/lua/lua_record.c): one type for what
-- pp.emit returns, what pp.store keeps and what record sets hand out; fields
-- read on access, the line from the C formatter; and pp.parse.list, which
-- makes a record set from records and tables without printing a line.
local pp = require "phaseprobe"
local records = require "phaseprobe.records"

local function tmpname()
  local p = os.tmpname()
  os.remove(p)
  return p
end

local slurp = require("helpers.files").slurp

-- `n` records emitted to a file sink after `fill(i)` charged the dispatch:
-- the records and the lines the sink wrote.
local function emitted(n, fill)
  local path = tmpname()
  pp.enable()
  assert(pp.sink(path))
  pp.store.enable(true)
  pp.store.clear()
  local out = {}
  for i = 1, n do
    pp.begin()
    fill(i)
    out[i] = pp.emit { seq = i }
  end
  assert(pp.flush(2000))
  pp.sink("none")
  local lines = {}
  for l in slurp(path):gmatch("[^\n]+") do lines[#lines + 1] = l end
  os.remove(path)
  return out, lines
end

-- name=value pairs of a line, in order
local function tokens(line)
  local prefix, rest = line:match("^(%S+)(.*)$")
  local t = {}
  for k, v in rest:gmatch(" ([%w_]+)=(%S*)") do t[#t + 1] = { k, v } end
  return prefix, t
end

describe("phaseprobe.record", function()
  after_each(function()
    pp.use(pp.default_schema())
    pp.tag("shape", nil)
    pp.tag("run", nil)
    pp.sink("none")
  end)

  it("pp.emit returns one: every field of the default schema and every tag, as its line says", function()
    pp.use(pp.default_schema())
    pp.tag("shape", "cjk")
    pp.tag("run", "7")
    local recs, lines = emitted(3, function(i)
      for k, ph in ipairs(pp.default_schema().phases) do pp.add_ns(ph, 1000 * i + k) end
      pp.add_nested_ns("ptx_digest", 11 * i)
      pp.counts { nodes = 100 * i, ptx_bytes = 310 * i }
      pp.cache("ptx", i == 1 and "miss" or "hit")
      pp.kernel_ns(5000 + i, "event", 40)
    end)
    assert.are.equal(3, #lines)
    for i, r in ipairs(recs) do
      assert.are.equal("userdata", type(r))
      assert.are.equal("phaseprobe.record", getmetatable(r).__name)
      -- the line, byte for byte as the sink wrote it
      assert.are.equal(lines[i], tostring(r))
      local prefix, toks = tokens(lines[i])
      assert.are.equal(prefix, r._prefix)
      -- the line's fields are the record's, in the schema's order, then the tags
      local order = {}
      for k in pairs(r) do order[#order + 1] = k end
      assert.are.equal(#order, #toks)
      local in_line, at = {}, 0
      for j, kv in ipairs(toks) do
        assert.are.equal(order[j], kv[1])
        in_line[kv[1]] = true
      end
      for _, f in ipairs(r._fields) do
        if in_line[f] then
          at = at + 1
          assert.are.equal(f, toks[at][1])
        else
          assert.is_nil(r[f], f) -- left out of the line: absent here too
        end
      end
      local nfields = at
      assert.are.equal(nfields + 2, #toks) -- the fields, then the two tags
      for j, kv in ipairs(toks) do
        local k, v = kv[1], kv[2]
        local got = r[k]
        if k == "kernel_src" or j > nfields then
          assert.are.equal(v, got, k)
        else
          assert.are.equal(math.tointeger(v), got, k)
          assert.are.equal("integer", math.type(got), k)
        end
        assert.are.equal(v, r:_text(k), k)
      end
      assert.are.equal("cjk", r.shape)
      assert.are.equal("7", r.run) -- tags are strings
      assert.are.equal(1000 * i + 2, r.ptx_ns)
      assert.is_nil(r.no_such_field)
      assert.is_nil(r[1])
    end
  end)

  it("follows a declared schema: its own phases, nested regions, counts and caches", function()
    pp.schema { prefix = "mini", phases = { "parse", "compile" }, nested = { "compile_opt" },
      counts = { "size" }, caches = { "mod" } }
    local recs, lines = emitted(2, function(i)
      pp.add_ns("parse", 10 * i)
      pp.add_ns("compile", 20 * i)
      pp.add_nested_ns("compile_opt", 5 * i)
      pp.counts { size = i }
      pp.cache("mod", "disk_hit")
    end)
    for i, r in ipairs(recs) do
      assert.are.equal(lines[i], tostring(r))
      assert.are.equal("mini", r._prefix)
      local _, toks = tokens(lines[i])
      local j = 0
      for k, v in pairs(r) do
        j = j + 1
        assert.are.equal(toks[j][1], k)
        assert.are.equal(toks[j][2], tostring(v))
      end
      assert.are.equal(#toks, j)
      assert.are.equal(20 * i, r.compile_ns)
      assert.are.equal(5 * i, r.sub_compile_opt_ns)
      assert.are.equal(i, r.size)
      assert.are.equal(1, r.mod_cache_disk_hits)
      assert.is_nil(r.ptx_ns)
    end
  end)

  it("gives the full table, pairs in line order, and refuses to be written", function()
    pp.tag("shape", "prose")
    local recs = emitted(1, function() pp.add_ns("ptx", 42) end)
    local r = recs[1]
    local t = r:_table()
    assert.are.equal("table", type(t))
    assert.is_nil(getmetatable(t))
    local n = 0
    for k, v in pairs(t) do
      n = n + 1
      assert.are.equal(r[k], v, k)
    end
    local _, toks = tokens(tostring(r))
    assert.are.equal(#toks, n)
    assert.are.equal("prose", t.shape)
    local order = {}
    for k in pairs(r) do order[#order + 1] = k end
    assert.are.equal("seq", order[1])
    assert.are.equal("shape", order[#order])
    assert.are.equal(n, #order)
    local ok, err = pcall(function() r.ptx_ns = 1 end)
    assert.is_false(ok)
    assert.matches("records are read%-only", err)
    t.ptx_ns = 1 -- the table is the caller's
    assert.are.equal(42, r.ptx_ns)
  end)

  it("hands u64 values above 2^63-1 to Lua as floats; the line and _text keep the digits", function()
    local recs, lines = emitted(1, function()
      pp.add_ns("prepare", math.maxinteger)
      pp.add_ns("prepare", math.maxinteger)
      pp.add_ns("prepare", 5) -- saturates at 2^64 - 1
      pp.add_ns("ptx", math.maxinteger) -- 2^63 - 1: still an integer
    end)
    local r = recs[1]
    assert.are.equal(lines[1], tostring(r))
    assert.truthy(lines[1]:find(" prepare_ns=18446744073709551615 ", 1, true))
    assert.are.equal("float", math.type(r.prepare_ns))
    assert.are.equal(2 ^ 64, r.prepare_ns)
    assert.is_true(r.prepare_ns > r.ptx_ns) -- ordered as the u64 values are
    assert.are.equal("integer", math.type(r.ptx_ns))
    assert.are.equal(math.maxinteger, r.ptx_ns)
    assert.are.equal("18446744073709551615", r:_text("prepare_ns"))
    assert.are.equal("18446744073709551615", r:_text("named_host_ns"))
    -- parsed from the line: the same representation
    local back = records.from_string(lines[1] .. "\n")[1]
    assert.are.equal(2 ^ 64, back.prepare_ns)
    assert.are.equal("float", math.type(back.prepare_ns))
    assert.are.equal(lines[1], tostring(back))
    -- and into a set built from the record: the exact value again
    local copy = records.from_list({ r })[1]
    assert.are.equal(lines[1], tostring(copy))
  end)

  it("is the one type: emitted, stored, parsed and set records share it", function()
    pp.tag("shape", "code")
    local recs, lines = emitted(2, function(i) pp.add_ns("stage", i) end)
    local mt = getmetatable(recs[1])
    local stored = pp.store.records()
    local parsed = records.from_string(table.concat(lines, "\n"))
    local built = records.from_list(recs)
    for i = 1, 2 do
      for _, r in ipairs { stored[i], pp.store.get(i), parsed[i], parsed:record(i), built[i],
        parsed:columns():row(i) } do
        assert.are.equal(mt, getmetatable(r))
        assert.are.equal(lines[i], tostring(r))
        assert.are.equal(recs[i].stage_ns, r.stage_ns)
        assert.are.equal("code", r.shape)
      end
    end
    -- a set built from records is not made by printing them: no line is parsed
    assert.are.equal("(list)", built:columns():get(1, "@file"))
    assert.are.equal(2, built:columns():get(2, "@line"))
  end)

  it("a row of a closed store says so instead of reading freed memory", function()
    local cols = pp.parse.string("p a=1 b=x\n")
    local r = cols:row(1)
    local view = cols:row(1, { "b" })
    assert.are.equal("p b=x", tostring(view))
    assert.is_nil(view.a)
    cols:close()
    local ok, err = pcall(function() return r.a end)
    assert.is_false(ok)
    assert.matches("record store it belongs to was closed", err)
    assert.matches("closed", tostring(r))
  end)

  it("answers its own names only as they are spelled (no NUL tricks)", function()
    local r = pp.parse.string("p a=1\n"):row(1)
    assert.are.equal("p", r._prefix)
    assert.is_nil(r["_prefix\0x"])
    assert.is_nil(r["a\0"])
    assert.are.equal(1, r.a)
  end)
end)

describe("pp.parse.list", function()
  it("builds a store from tables: fields in the given order, then by name", function()
    local cols = pp.parse.list({ { wall_ns = 5, shape = "a", seq = 1 }, { seq = 2, wall_ns = 7 } },
      { prefix = "d", fields = { "seq", "wall_ns" } })
    assert.are.equal(2, cols:count())
    assert.are.equal("d seq=1 wall_ns=5 shape=a", cols:line(1))
    assert.are.equal("d seq=2 wall_ns=7", tostring(cols:row(2)))
  end)

  it("takes ordered pairs, numbers as their text read exactly", function()
    local cols = pp.parse.list({
      { { "seq", "18446744073709551615", true }, { "d", "-5", true }, { "f", "2.5", true }, { "s", "a b" } },
    }, { prefix = "p", text = "any", source = "in.csv", lines = { 4 } })
    local r = cols:row(1)
    assert.are.equal("p seq=18446744073709551615 d=-5 f=2.5 s=a b", tostring(r))
    assert.are.equal(-5, r.d)
    assert.are.equal("float", math.type(r.f))
    assert.are.equal("in.csv", cols:get(1, "@file"))
    assert.are.equal(4, cols:get(1, "@line"))
  end)

  it("refuses what a record cannot hold, naming element (or file and line) and field", function()
    for _, c in ipairs {
      { { { v = "a b" } }, nil, "element 1: field 'v': a string holding a blank" },
      { { { v = true } }, nil, "element 1: field 'v': a boolean" },
      { { { wall_ns = -1 } }, nil, "field 'wall_ns': a negative integer where an unsigned integer belongs" },
      { { { wall_ns = "x" } }, nil, "field 'wall_ns': a string where an unsigned integer belongs" },
      { { { _fields = 1 } }, nil, "field '_fields': a reserved name" },
      { { { a = 1 }, 5 }, nil, "element 2 is a number" },
      { { { { "n", "99999999999999999999", true } } }, { source = "f.jsonl", lines = { 9 } },
        "^f%.jsonl:9: field 'n': 99999999999999999999 does not fit in 64 bits$" },
      { { { { "n", "007", true } } }, { source = "f.jsonl", lines = { 3 } },
        "^f%.jsonl:3: field 'n': 007 is not a number as JSON writes one$" },
      { { { { "n", "-0012", true } } }, nil, "field 'n': %-0012 is not a number as JSON writes one" },
      { { { a = 1 } }, { prefix = "9x" }, "prefix '9x' is not a prefix word" },
    } do
      local ok, err = pcall(pp.parse.list, c[1], c[2])
      assert.is_false(ok, c[3])
      assert.matches(c[3], err)
    end
  end)
end)
