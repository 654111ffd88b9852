-- The record-line parser: what is a record line, what is rejected and where,
-- and that every line is counted.
local pp = require "phaseprobe"

local FIXTURE = "spec/fixtures/logs/mixed.log"

local function fixture_lines()
  local out = {}
  for l in io.lines(FIXTURE) do out[#out + 1] = l end
  return out
end

local function parse(s, opts)
  local cols, rep = pp.parse.string(s, opts)
  return cols, rep
end

-- parse, asserting that n records were parsed.
local function parsed(n, s, opts)
  local cols, rep = parse(s, opts)
  assert.are.equal(n, rep.parsed)
  return cols, rep
end

local tmpfile = require("helpers.files").tmpfile

-- Each listed rejection (by its number in rep.errors) says what it should.
local function errors_say(rep, wants)
  for i, want in pairs(wants) do assert.matches(want, rep.errors[i].what, "rejection " .. i) end
end

describe("pp.parse on the mixed fixture log", function()
  it("counts every line: 4 records, 8 rejected, 7 other, in auto mode", function()
    local cols, rep = pp.parse.file(FIXTURE)
    assert.are.equal(19, rep.total)
    assert.are.equal(4, rep.parsed)
    assert.are.equal(8, rep.rejected)
    assert.are.equal(7, rep.other)
    assert.are.equal(rep.total, rep.parsed + rep.rejected + rep.other)
    assert.are.equal(4, cols:count())
    assert.are.equal(FIXTURE, rep.file)
    assert.is_false(rep.unterminated)
  end)

  it("names the file, line, column and problem of each rejected line", function()
    local _, rep = pp.parse.file(FIXTURE)
    local lines = fixture_lines()
    local expect = {
      { 5, "missing field ptx_cache_misses for prefix 'vyre%-cuda%-dispatch%-phase'" },
      { 9, "field 'wall_ns': bad number '12x5'" },
      { 10, "field 3 %('ptx_bytes'%): no '='" },
      { 13, "duplicate field 'compile_ns' %(fields 2 and 3%)" },
      { 15, "field 2 %('took'%): no '='" },
      { 16, "field 'empty': empty value" },
      { 17, "field 'a': '=' inside the value" },
      { 18, "prefix 'vyre%-cuda%-dispatch%-phase' with no fields" },
    }
    assert.are.equal(#expect, #rep.errors)
    for i, e in ipairs(expect) do
      local err = rep.errors[i]
      assert.are.equal(FIXTURE, err.file)
      assert.are.equal(e[1], err.line)
      assert.matches(e[2], err.what)
    end
    -- columns point at the offending token (1-based bytes)
    assert.are.equal(lines[9]:find("12x5", 1, true), rep.errors[2].column)
    assert.are.equal(lines[10]:find("ptx_bytes buffers", 1, true), rep.errors[3].column)
    assert.are.equal(#lines[5] + 1, rep.errors[1].column)
  end)

  it("in list mode, a line of another prefix word is other, not rejected", function()
    local _, rep = pp.parse.file(FIXTURE, { prefix = { "vyre-cuda-dispatch-phase", "myprobe" } })
    assert.are.equal(4, rep.parsed)
    assert.are.equal(7, rep.rejected)
    assert.are.equal(8, rep.other)
    for _, e in ipairs(rep.errors) do assert.are_not.equal(15, e.line) end
    local _, only = pp.parse.file(FIXTURE, { prefix = "myprobe" })
    assert.are.equal(1, only.parsed)
    assert.are.equal(3, only.rejected)
    assert.are.equal(15, only.other)
  end)

  it("keeps each record's line number and file", function()
    local cols = pp.parse.file(FIXTURE)
    local got = {}
    for i = 1, cols:count() do
      got[i] = cols:get(i, "@line")
      assert.are.equal(FIXTURE, cols:get(i, "@file"))
    end
    assert.are.same({ 4, 8, 12, 14 }, got)
  end)

  it("reads the reference's line and ours unchanged", function()
    local cols = pp.parse.file(FIXTURE)
    local lines = fixture_lines()
    assert.are.equal(lines[4], cols:line(1))
    assert.are.equal(lines[4], tostring(cols:row(1)))
    assert.are.equal(lines[8], cols:line(2))
    assert.are.equal(lines[14], cols:line(4))
    local r = cols:row(2)
    assert.are.equal("vyre-cuda-dispatch-phase", r._prefix)
    assert.are.equal("seq", r._fields[1])
    assert.are.equal("shape", r._fields[#r._fields])
    assert.are.equal("prose", r.shape)
    assert.are.equal("event", r.kernel_src)
    assert.are.equal(470000, r.wall_ns)
    assert.are.equal("integer", math.type(r.wall_ns))
  end)

  it("keeps unknown fields of known prefixes", function()
    local cols = parsed(1, "vyre-cuda-dispatch-phase " .. fixture_lines()[4]:match("^%S+ (.*)$")
      .. " extra_field=7 note=hello")
    assert.are.equal(7, cols:get(1, "extra_field"))
    assert.are.equal("hello", cols:get(1, "note"))
  end)
end)

describe("pp.parse values", function()
  it("types values: unsigned and negative integers, decimals, strings", function()
    local cols = parsed(1, "p a=12 b=-7 c=2.5 d=1e3 e=event f=3abc g=-x h=007")
    assert.are.equal(12, cols:get(1, "a"))
    assert.are.equal("integer", math.type(cols:get(1, "b")))
    assert.are.equal(-7, cols:get(1, "b"))
    assert.are.equal(2.5, cols:get(1, "c"))
    assert.are.equal(1000.0, cols:get(1, "d"))
    assert.are.equal("float", math.type(cols:get(1, "d")))
    assert.are.equal("event", cols:get(1, "e"))
    assert.are.equal("3abc", cols:get(1, "f"))
    assert.are.equal("-x", cols:get(1, "g"))
    assert.are.equal("007", cols:get(1, "h")) -- no number is written so
    assert.are.equal("integer", cols:kind("a"))
    assert.are.equal("number", cols:kind("c"))
    assert.are.equal("string", cols:kind("e"))
  end)

  it("holds u64 values whole: above 2^63-1 Lua sees the nearest float, the line the digits", function()
    local cols = parsed(2, "p wall_ns=18446744073709551615\np wall_ns=5")
    assert.are.equal(2 ^ 64, cols:get(1, "wall_ns"))
    assert.are.equal("float", math.type(cols:get(1, "wall_ns")))
    assert.are.equal("integer", math.type(cols:get(2, "wall_ns")))
    assert.are.equal(2 ^ 64, cols:values("wall_ns")[1])
    assert.are.equal("p wall_ns=18446744073709551615", cols:line(1))
    assert.are.equal("18446744073709551615", cols:row(1):_text("wall_ns"))
    local s = cols:summary("wall_ns")
    assert.are.equal(2 ^ 64, s.max)
    assert.are.equal(5, s.min)
  end)

  it("rejects what is not an unsigned integer in numeric fields", function()
    local _, rep = parse(table.concat({
      "p foo_ns=-5", "p foo_ns=1.5", "p x_cache_hits=a", "p y_cache_misses=1e3",
      "p z_ns=18446744073709551616", "p seq=one", "p count=x", "p ok_ns=0",
    }, "\n"), { numeric = { "count" } })
    assert.are.equal(1, rep.parsed)
    assert.are.equal(7, rep.rejected)
    errors_say(rep, { [1] = "bad number '%-5'", [2] = "bad number '1.5'", [3] = "field 'x_cache_hits'",
      [5] = "number out of range", [6] = "field 'seq': bad number 'one'", [7] = "field 'count'" })
  end)

  it("turns a column that sees text into a text column", function()
    local cols = parse("p v=1\np v=abc\np v=2.5")
    assert.are.equal("string", cols:kind("v"))
    assert.are.same({ "1", "abc", "2.5" }, cols:values("v"))
  end)

  it("turns an integer column that sees a decimal into a number column", function()
    local cols = parse("p v=1\np v=2.5\np v=4")
    assert.are.equal("number", cols:kind("v"))
    assert.are.same({ 1.0, 2.5, 4.0 }, cols:values("v"))
    assert.are.equal(7.5, cols:summary("v").sum)
  end)

  it("leaves absent fields absent", function()
    local cols = parse("p a=1 b=2\np a=3\np b=4 c=5")
    assert.is_nil(cols:get(2, "b"))
    assert.is_nil(cols:get(1, "c"))
    assert.are.equal(4, cols:get(3, "b"))
    assert.are.same({ 2, 4 }, cols:values("b"))
    assert.are.equal(2, cols:summary("b").count)
    assert.are.same({ "a", "b", "c" }, cols:fields())
  end)
end)

describe("pp.parse line rules", function()
  it("strips a CR before the newline and skips leading blanks; tabs separate", function()
    local cols = parsed(2, "p a=1\r\n  \tp\ta=2  b=x\t\r\n")
    assert.are.same({ 1, 2 }, cols:values("a"))
    assert.are.equal("x", cols:get(2, "b"))
  end)

  it("parses an unterminated last line and says so", function()
    local cols, rep = parsed(2, "p a=1\np a=2")
    assert.is_true(rep.unterminated)
    assert.are.equal(2, cols:count())
  end)

  it("counts blank lines and other text as other", function()
    local _, rep = parse("\n\nhello world\nkey=value first\n--flag x=1\n1abc x=2\n")
    assert.are.equal(6, rep.total)
    assert.are.equal(6, rep.other)
    assert.are.equal(0, rep.parsed + rep.rejected)
  end)

  it("needs a name= after an unknown prefix word in auto mode", function()
    local _, rep = parse("foo\nfoo bar\nfoo a-b=1\nfoo a=1")
    assert.are.equal(3, rep.other)
    assert.are.equal(1, rep.parsed)
  end)

  it("rejects bad names, control characters and reserved names", function()
    local _, rep = parse(table.concat({
      "p a-b=1", "p =1", "p " .. string.rep("n", 64) .. "=1", "p a=b\1c", "p _prefix=1",
      "p " .. string.rep("n", 63) .. "=1",
    }, "\n"), { prefix = "p" })
    assert.are.equal(1, rep.parsed)
    errors_say(rep, { "'%-' in the name", "empty name", "name longer than 63 bytes",
      "control character 0x01", "reserved name" })
  end)

  it("reserves the names a record itself answers to, as the record builder does", function()
    -- r._prefix, r._fields, r:_table(), r:_text(): a field of one of these
    -- names could not be read from the record, from a line or from a list
    for _, name in ipairs { "_prefix", "_fields", "_table", "_text" } do
      local _, rep = parse("p " .. name .. "=1 a=2", { prefix = "p" })
      assert.are.equal(0, rep.parsed, name)
      assert.are.equal("field '" .. name .. "': reserved name", rep.errors[1].what)
      local ok, err = pcall(pp.parse.list, { { [name] = 1 } })
      assert.is_false(ok, name)
      assert.matches("field '" .. name .. "': a reserved name", err)
    end
    -- names that only begin like them are fields like any other
    local set = parse("p _tablex=1 _text2=2 _x=3", { prefix = "p" })
    assert.are.equal(1, set:count())
  end)

  it("rejects a line with more fields than the limit", function()
    local parts = { "p" }
    for i = 1, pp.parse.max_fields + 1 do parts[#parts + 1] = "f" .. i .. "=1" end
    local _, rep = parse(table.concat(parts, " "))
    assert.are.equal(1, rep.rejected)
    assert.matches("more than " .. pp.parse.max_fields .. " fields", rep.errors[1].what)
  end)

  it("rejects a known prefix with a truncated tail, and accepts the reference's 30 fields", function()
    local line = fixture_lines()[4]
    local cut = line:sub(1, #line - #" ptx_cache_misses=0")
    local _, rep = parse(line .. "\n" .. cut .. "\n" .. line:gsub(" unattributed_ns=%d+", ""))
    assert.are.equal(1, rep.parsed)
    assert.are.equal(2, rep.rejected)
    errors_say(rep, { "missing field ptx_cache_misses", "missing field unattributed_ns" })
  end)

  it("knows declared schemas' prefixes when told", function()
    local s = pp.schema { prefix = "mine", phases = { "a", "b" }, counts = { "items" }, use = false }
    local _, rep = parse("mine seq=1 items=2\nmine items=zz", { schemas = { s } })
    assert.are.equal(2, rep.rejected)
    errors_say(rep, { "missing fields", "field 'items': bad number" })
    local _, plain = parse("mine seq=1 items=2")
    assert.are.equal(1, plain.parsed)
  end)

  it("keeps at most max_errors error entries but counts every rejected line", function()
    local _, rep = parse(string.rep("p a=1 b\n", 10), { max_errors = 3 })
    assert.are.equal(10, rep.rejected)
    assert.are.equal(3, #rep.errors)
    assert.are.equal(7, rep.errors_dropped)
  end)
end)

describe("pp.parse inputs", function()
  it("gives the same records from a file read in chunks, a string and a line iterator", function()
    local parts = {}
    for i = 1, 40000 do
      parts[i] = string.format("p seq=%d wall_ns=%d tag=%s", i, i * 7, i % 3 == 0 and "x" or "y")
      if i % 997 == 0 then parts[i] = parts[i] .. "\nnoise line " .. i end
    end
    local text = table.concat(parts, "\n") .. "\n"
    assert.is_true(#text > (1 << 20)) -- crosses the reader's 1 MiB chunks
    local path = tmpfile(text)
    local a, ra = pp.parse.file(path)
    local b, rb = pp.parse.string(text)
    local c, rc = pp.parse.lines(text:gmatch("([^\n]*)\n"))
    os.remove(path)
    for _, r in ipairs({ ra, rb, rc }) do
      assert.are.equal(40000, r.parsed)
      assert.are.equal(40, r.other)
      assert.are.equal(0, r.rejected)
    end
    for _, cols in ipairs({ a, b, c }) do
      local s = cols:summary("wall_ns")
      assert.are.equal(7 * 40000 * 40001 // 2, s.sum)
      assert.are.equal(40000 // 3, #cols:where("tag", "x"))
    end
  end)

  it("reads several files into one store, with counts per file", function()
    local p1 = tmpfile("p a=1\nother\np a=2\n")
    local p2 = tmpfile("p a=3\np a=4 b\n")
    local p <close> = pp.parse.new()
    assert.is_true(p:file(p1))
    assert.is_true(p:file(p2))
    local cols, rep = p:finish()
    os.remove(p1)
    os.remove(p2)
    assert.are.equal(3, cols:count())
    assert.are.equal(5, rep.total)
    assert.are.equal(2, #rep.files)
    assert.are.equal(p1, rep.files[1].file)
    assert.are.equal(2, rep.files[1].parsed)
    assert.are.equal(1, rep.files[1].other)
    assert.are.equal(1, rep.files[2].rejected)
    assert.are.equal(p2, rep.errors[1].file)
    assert.are.equal(2, rep.errors[1].line)
    assert.are.equal(2, #cols:where("@file", p1))
    assert.are.equal(1, cols:get(3, "@line"))
  end)

  it("keeps a line iterator's lines in its source when the iterator feeds the parser too (#13 item 12)", function()
    local p <close> = pp.parse.new()
    local outer = { "p a=1", "p a=2", "p a=3", "p a=4 b" }
    local i = 0
    p:lines(function()
      i = i + 1
      if i == 2 then p:string("p a=10\np a=11 c\n", "inner") end
      if i == 3 then
        local j = 0
        p:lines(function() j = j + 1; return ({ "p a=20" })[j] end, "nested")
      end
      return outer[i]
    end, "outer")
    local cols, rep = p:finish()
    local where = {}
    for r = 1, cols:count() do
      where[#where + 1] = ("%d %s:%d"):format(cols:get(r, "a"), cols:get(r, "@file"), cols:get(r, "@line"))
    end
    assert.are.same({ "1 outer:1", "10 inner:1", "2 outer:2", "20 nested:1", "3 outer:3" }, where)
    assert.are.same({ "outer", "inner", "nested" },
      { rep.files[1].file, rep.files[2].file, rep.files[3].file })
    assert.are.same({ 3, 1, 4 }, { rep.files[1].parsed, rep.files[1].rejected, rep.files[1].total })
    assert.are.same({ 1, 1 }, { rep.files[2].parsed, rep.files[2].rejected })
    assert.are.same({ "inner", 2 }, { rep.errors[1].file, rep.errors[1].line })
    assert.are.same({ "outer", 4 }, { rep.errors[2].file, rep.errors[2].line })
    -- a file's progress function may not feed its parser: the file's next
    -- line may have begun in the bytes already read
    local big = tmpfile(("p a=1 pad=" .. ("x"):rep(1000) .. "\n"):rep(20000))
    local q <close> = pp.parse.new()
    local ok, err = pcall(q.file, q, big, function() q:string("p a=2\n") end)
    os.remove(big)
    assert.is_false(ok)
    assert.matches("cannot be fed while it reads a file", err)
  end)

  it("returns nil and a message for an unreadable file", function()
    local cols, msg = pp.parse.file("/nonexistent/dir/run.log")
    assert.is_nil(cols)
    assert.matches("^/nonexistent/dir/run.log: No such file", msg)
    local c2, m2 = pp.parse.file("/")
    assert.is_nil(c2)
    assert.matches("Is a directory", m2)
  end)

  it("calls the progress function on big inputs and passes its errors on", function()
    local text = string.rep("p wall_ns=123456789 x=1\n", 800000) -- about 19 MiB
    local path = tmpfile(text)
    local calls = {}
    local cols = pp.parse.file(path, { progress = function(bytes, recs)
      calls[#calls + 1] = { bytes, recs }
    end })
    assert.are.equal(800000, cols:count())
    assert.is_true(#calls >= 1)
    assert.is_true(calls[1][1] >= 16 * 1024 * 1024)
    assert.is_true(calls[1][2] > 0)
    local ok, err = pcall(pp.parse.file, path, { progress = function() error("stop here") end })
    assert.is_false(ok)
    assert.matches("^phaseprobe.parse: progress callback: .*stop here", err)
    os.remove(path)
  end)

  it("raises on bad options", function()
    assert.has_error(function() pp.parse.string("p a=1", { prefix = { 1 } }) end)
    assert.has_error(function() pp.parse.string("p a=1", { prefix = "has space" }) end)
    assert.has_error(function() pp.parse.string("p a=1", { schemas = { "x" } }) end)
    assert.has_error(function() pp.parse.string("p a=1", { max_errors = 0 }) end)
    assert.has_error(function() pp.parse.string("p a=1", { numeric = { "a-b" } }) end)
    assert.has_error(function()
      pp.parse.lines(function() return {} end)
    end)
  end)

  it("reads the live store's records as the lines they print as", function()
    pp.store.clear()
    pp.sink("none")
    pp.enable()
    pp.tag("shape", "cjk")
    local emitted = {}
    for i = 1, 3 do
      pp.begin()
      pp.add_ns("prepare", 100 * i)
      pp.add_ns("ptx", 1000 * i)
      pp.add_nested_ns("ptx_digest", 400 * i)
      pp.counts { nodes = 10 * i }
      pp.cache("ptx", i == 1 and "miss" or "hit")
      emitted[i] = pp.emit { seq = i, wall_ns = 5000 * i }
    end
    pp.tag("shape", nil)
    pp.disable()
    pp.sink("stderr")
    local cols, rep = pp.parse.store()
    pp.store.clear()
    assert.are.equal(3, rep.parsed)
    assert.are.equal(0, rep.rejected)
    for i = 1, 3 do
      assert.are.equal(tostring(emitted[i]), cols:line(i))
      assert.are.equal(tostring(emitted[i]), tostring(cols:row(i)))
      assert.are.equal("cjk", cols:get(i, "shape"))
    end
    assert.are.equal(6000, cols:summary("ptx_ns").sum)
  end)
end)

describe("pp.parse handles", function()
  it("closes columns and parsers idempotently; closed ones refuse use", function()
    local cols = parse("p a=1")
    cols:close()
    cols:close()
    assert.has_error(function() cols:count() end)
    assert.matches("closed", tostring(cols))
    local p = pp.parse.new()
    p:string("p a=1")
    local c2 = p:finish()
    assert.are.equal(1, c2:count())
    assert.has_error(function() p:string("p a=2") end)
    p:close()
  end)

  it("refuses a selection made from another store", function()
    local a, b = parse("p a=1"), parse("p a=1")
    local sel = a:where("a", 1)
    assert.has_error(function() b:summary("a", sel) end)
    assert.are.equal(1, a:summary("a", sel).count)
  end)

  it("prints stores, parsers and selections readably", function()
    local cols = parse("p a=1\np a=2")
    assert.are.equal("phaseprobe.columns (2 records, 1 fields)", tostring(cols))
    assert.are.equal("phaseprobe.selection (1 records)", tostring(cols:where("a", 2)))
    local p <close> = pp.parse.new()
    p:string("p a=1\nx")
    assert.matches("2 lines: 1 parsed, 0 rejected, 1 other", tostring(p))
  end)
end)
