-- Record sets: filtering, grouping, column views, summaries, printing.
local pp = require "phaseprobe"
local records = require "phaseprobe.records"
local matches_all = require("helpers.text").matches_all

local LOG = table.concat({
  "d seq=1 shape=prose wall_ns=10 ptx_ns=4 device_window_ns=9 kernel_ns=5",
  "d seq=2 shape=cjk wall_ns=20 ptx_ns=8 device_window_ns=15 kernel_ns=5",
  "d seq=3 shape=prose wall_ns=30 ptx_ns=12 device_window_ns=0 kernel_ns=0",
  "d seq=4 shape=cjk wall_ns=40 ptx_ns=16 device_window_ns=3 kernel_ns=7",
  "d seq=5 wall_ns=50 ptx_ns=20 device_window_ns=30 kernel_ns=10",
}, "\n")

local function set()
  return (records.from_string(LOG))
end

describe("record set summaries", function()
  it("gives count, min, median, mean, p90, p99, max and sum", function()
    local s = set():summary("wall_ns")
    assert.are.equal(5, s.count)
    assert.are.equal(10, s.min)
    assert.are.equal(50, s.max)
    assert.are.equal(150, s.sum)
    assert.are.equal("integer", math.type(s.sum))
    assert.are.equal(30, s.mean)
    assert.are.equal(30, s.median)
    -- type 7: h = (n-1) p; 0.9 -> 3.6 -> 40 + 0.6 * 10
    assert.is_true(math.abs(s.p90 - 46) < 1e-9)
    assert.is_true(math.abs(s.p99 - 49.6) < 1e-9)
  end)

  it("takes the median of an even count as the mean of the middle two", function()
    local s = set():where{ shape = { "prose", "cjk" } }:summary("ptx_ns")
    assert.are.equal(4, s.count)
    assert.are.equal(10, s.median)
    assert.are.equal(40, s.sum)
  end)

  it("gives a field's mean per record, records lacking it counting as 0", function()
    -- ptx_ns 4+8+12+16+20 over 5; kernel_ns on every record; no "nope"
    assert.are.equal(12, set():per_record("ptx_ns"))
    local s = records.from_string("d a=2\nd b=1\nd a=4 b=1\n")
    assert.are.equal(2, s:per_record("a"))
    assert.are.equal(0, s:per_record("nope"))
    assert.are.equal(0, s:where("a", 99):per_record("a"))
  end)

  it("summarises plain arrays the same way", function()
    local s = pp.numeric.summary({ 50, 10, 40, 20, 30 })
    assert.are.equal(30, s.median)
    assert.is_true(math.abs(s.p90 - 46) < 1e-9)
    assert.are.equal(150, s.sum)
    assert.are.equal(0, pp.numeric.summary({}).count)
  end)

  it("sums a per-record linear combination, with a floor", function()
    local st = set():lincomb({ { "device_window_ns", 1 }, { "kernel_ns", -1 } }, 0)
    -- 4, 10, 0, max(0, -4) = 0, 20
    assert.are.equal(5, st.count)
    assert.are.equal(34, st.sum)
    assert.are.equal(0, st.min)
    local raw = set():lincomb({ { "device_window_ns", 1 }, { "kernel_ns", -1 } })
    assert.are.equal(30, raw.sum)
    assert.are.equal(-4, raw.min)
  end)
end)

describe("record set filters and views", function()
  it("selects by equality, alternatives and absence", function()
    local s = set()
    assert.are.equal(2, #s:where("shape", "cjk"))
    assert.are.equal(2, s:where{ shape = "prose" }:count())
    assert.are.equal(1, s:where("shape", false):count())
    assert.are.equal(50, s:where("shape", false)[1].wall_ns)
    assert.are.equal(3, s:where{ shape = { "cjk", false } }:count())
    assert.are.equal(1, s:where{ shape = "cjk", seq = 4 }:count())
    assert.are.equal(0, s:where{ shape = "cjk", seq = 3 }:count())
  end)

  it("selects numeric ranges and by predicate", function()
    local s = set()
    assert.are.equal(3, s:range("wall_ns", 20, 40):count())
    assert.are.equal(4, s:range("device_window_ns", 1):count())
    -- 0.8 wall > wall - 5 holds below wall 25
    local big = s:filter(function(r) return r.ptx_ns * 2 > r.wall_ns - 5 end)
    assert.are.same({ 1, 2 }, (function()
      local out = {}
      for i, r in big:each() do out[i] = r.seq end
      return out
    end)())
    local odd = s:filter(function(r) return r.seq % 2 == 1 end)
    assert.are.same({ 10, 30, 50 }, odd:values("wall_ns"))
    assert.are.equal(2, s:head(2):count())
  end)

  it("indexes records 1-based and prints each as its line", function()
    local s = set():where("shape", "cjk")
    assert.are.equal(2, #s)
    assert.are.equal(2, s[1].seq)
    assert.are.equal(4, s[2].seq)
    assert.is_nil(s[3])
    assert.are.equal("d seq=2 shape=cjk wall_ns=20 ptx_ns=8 device_window_ns=15 kernel_ns=5",
      tostring(s[1]))
    assert.are.equal(tostring(s[2]), s:line(2))
  end)

  it("shows only the selected columns in a view", function()
    local v = set():select("wall_ns", "seq")
    assert.are.same({ "wall_ns", "seq" }, v:fields())
    local r = v[2]
    assert.are.equal(20, r.wall_ns)
    assert.is_nil(r.ptx_ns)
    assert.are.equal("d wall_ns=20 seq=2", tostring(r))
    assert.has_error(function() set():select("wal_ns") end,
      "phaseprobe.records:select: no field 'wal_ns' in this record set (5 records; fields: "
        .. "seq, shape, wall_ns, ptx_ns, device_window_ns, kernel_ns)")
  end)

  it("names the field and the set's fields when a field is unknown", function()
    local ok, err = pcall(function() return set():summary("nope") end)
    assert.is_false(ok)
    matches_all(err, { "no field 'nope'", "fields: seq, shape" })
  end)
end)

describe("records.equal and records.union", function()
  local U = "18446744073709551615"
  local text = table.concat({
    "p seq=1 wall_ns=10 knob=" .. U, "p seq=2 wall_ns=20 knob=18446744073709551614",
    "p seq=3 wall_ns=30 knob=5", "p seq=4 wall_ns=40", "p seq=5 wall_ns=50 knob=" .. U,
    "p seq=6 wall_ns=60 tag=base" }, "\n")

  it("matches a value given as text exactly, as --where F=V does, a u64 past 2^63-1 included", function()
    local set = records.from_string(text)
    local seqs = function(s) local t = {} for i = 1, s:count() do t[i] = s[i].seq end return t end
    assert.are.same({ 1, 5 }, seqs(records.equal(set, "knob", U)))
    assert.are.same({ 2 }, seqs(records.equal(set, "knob", "18446744073709551614")))
    assert.are.same({ 3 }, seqs(records.equal(set, "knob", "5")))
    assert.are.same({ 3 }, seqs(records.equal(set, "knob", 5)))
    assert.are.same({ 6 }, seqs(records.equal(set, "tag", "base")))
    assert.are.same({}, seqs(records.equal(set, "tag", "no such value")))
  end)

  it("joins sets over one store, each record once, in the store's order", function()
    local set = records.from_string(text)
    local u = records.union { records.equal(set, "knob", "5"), set:where { knob = false },
      records.equal(set, "knob", U), set:where { knob = false } }
    local seqs = {}
    for i = 1, u:count() do seqs[i] = u[i].seq end
    assert.are.same({ 1, 3, 4, 5, 6 }, seqs)
    assert.has_error(function() records.union { set, records.from_string(text) } end,
      "phaseprobe.records.union: element 2 is no set over the first one's store")
  end)
end)

describe("record set groups", function()
  it("groups by a tag in order of first appearance, absent values last-seen as their own group", function()
    local g = set():group("shape")
    assert.are.equal(3, #g)
    assert.are.equal("prose", g[1].key)
    assert.are.equal("cjk", g[2].key)
    assert.is_true(g[3].missing)
    assert.is_nil(g[3].key)
    assert.are.equal(2, g[1].n)
    assert.are.same({ 10, 30 }, g[1].set:values("wall_ns"))
    assert.are.same({ 20, 40 }, g:get("cjk").set:values("wall_ns"))
    local sums = {}
    for i, x in ipairs(g:summary("ptx_ns")) do sums[i] = x.summary.sum end
    assert.are.same({ 16, 24, 20 }, sums)
  end)

  it("groups by numbers and by source file", function()
    local s = records.from_string("p n=1 v=1\np n=2 v=2\np n=1 v=3\np n=1.0 v=4")
    local g = s:group("n")
    assert.are.equal(2, #g)
    assert.are.equal(3, g[1].n)
    local f = s:group("@file")
    assert.are.equal(1, #f)
    assert.are.equal("(string)", f[1].key)
  end)

  it("prints groups as a per-group table", function()
    local text = tostring(set():group("shape"))
    matches_all(text, { "phaseprobe.groups by shape: 3 groups", "prose%s+2%s+20 ns", "%(none%)%s+1%s+50 ns" })
  end)
end)

describe("record sets from other sources", function()
  it("builds from plain tables and from record tables", function()
    local s = records.from_list({ { wall_ns = 5, shape = "a" }, { wall_ns = 7, shape = "b" } },
      { prefix = "mine" })
    assert.are.equal(2, s:count())
    assert.are.equal("mine shape=a wall_ns=5", tostring(s[1]))
    local again = records.from_list(s:records())
    assert.are.equal(tostring(s[2]), tostring(again[2]))
    assert.has_error(function() records.from_list({ { v = "a b" } }) end)
    assert.has_error(function() records.from_list({ { v = true } }) end)
  end)

  it("reads files and several files; a missing file gives nil and a message", function()
    local s, rep = records.read("spec/fixtures/logs/mixed.log")
    assert.are.equal(4, s:count())
    assert.are.equal(8, rep.rejected)
    local both = records.read_many({ "spec/fixtures/logs/mixed.log", "spec/fixtures/logs/mixed.log" })
    assert.are.equal(8, both:count())
    local none, msg = records.read("/nonexistent.log")
    assert.is_nil(none)
    assert.matches("nonexistent.log", msg)
  end)

  it("takes the live store through pp.records.from_store", function()
    pp.store.clear()
    pp.sink("none")
    pp.enable()
    for i = 1, 4 do
      pp.begin()
      pp.add_ns("ptx", 100 * i)
      pp.emit { seq = i, wall_ns = 1000 }
    end
    pp.disable()
    pp.sink("stderr")
    local s = pp.records.from_store()
    pp.store.clear()
    assert.are.equal(4, #s)
    assert.are.equal(1000, s:summary("ptx_ns").sum)
    assert.are.equal(250, s:summary("ptx_ns").median)
  end)
end)

describe("record set printing and size", function()
  it("prints a header and a summary row per numeric field", function()
    local text = tostring(set())
    assert.matches("^phaseprobe.records: 5 records, 6 fields %(d: 5%)", text)
    assert.matches("\n5 records each\n", text)
    assert.matches("\nwall_ns%s+10 ns%s+30 ns%s+30 ns%s+46 ns%s+49.6 ns%s+50 ns%s+150 ns", text)
    assert.matches("text fields: shape %(2 distinct%)", text)
    assert.matches("0 records", tostring(set():where("shape", "none")))
  end)

  it("prints a per-dispatch view", function()
    local text = set():view({ "seq", "wall_ns" }, 2)
    assert.matches("seq%s+wall_ns", text)
    assert.matches("\n%s+1%s+10 ns", text)
    assert.matches("%(2 of 5 records%)", text)
  end)

  it("stores our full records in well under 300 bytes each", function()
    local line = io.lines("spec/fixtures/logs/mixed.log")
    local ours
    for l in line do if l:find("shape=prose") then ours = l end end
    local parts = {}
    for i = 1, 70000 do
      parts[i] = ours:gsub("seq=%d+", "seq=" .. i):gsub("start_ns=%d+", "start_ns=" .. (i * 1000003))
    end
    local s = records.from_string(table.concat(parts, "\n"))
    assert.are.equal(70000, s:count())
    local per = s:bytes() / s:count()
    assert.is_true(per < 300, string.format("%.1f bytes per record", per))
  end)
end)
