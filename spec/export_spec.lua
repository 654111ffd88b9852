-- Exports: the Chrome trace-event timeline, CSV and JSON lines, and the
-- subcommands that write them.
local pp = require "phaseprobe"
local export = require "phaseprobe.output.export"
local records_mod = require "phaseprobe.records"
local gen = require "helpers.records"
local tc = require "helpers.trace_check"
local cjson = require("cjson").new()

local files = require "helpers.files"
local slurp, spit = files.slurp, files.spit
local matches_all = require("helpers.text").matches_all

local dir
local function tmp(name) return dir:file(name) end
setup(function() dir = files.tmpdir() end)
teardown(function()
  dir:remove()
  pp.use(pp.default_schema())
end)

local function trace_of(records, name)
  local path = tmp(name or "t.json")
  assert(export.trace(gen.set(records), path))
  local rep = tc.check(slurp(path))
  assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
  return rep, path
end

local function by_seq(rep)
  local out = {}
  for _, d in ipairs(rep.dispatches) do out[math.tointeger(d.slice.ev.args.seq)] = d end
  return out
end

local function children_names(d)
  local names = {}
  local kids = {}
  for _, c in ipairs(d.children) do kids[#kids + 1] = c end
  table.sort(kids, function(a, b) return a.start < b.start end)
  for i, c in ipairs(kids) do names[i] = c.name end
  return names, kids
end

describe("the trace checker", function()
  -- the checker must be able to fail, or a passing trace means nothing
  local function doc(events) return cjson.encode({ traceEvents = events }) end

  it("rejects slices that overlap on one track without nesting", function()
    local rep = tc.check(doc {
      { name = "a", ph = "X", pid = 1, tid = 1, ts = 0, dur = 10 },
      { name = "b", ph = "X", pid = 1, tid = 1, ts = 5, dur = 10 },
    })
    assert.is_false(rep.ok)
    assert.matches("overlaps", rep.errors[1])
  end)

  it("accepts the same slices on two tracks", function()
    local rep = tc.check(doc {
      { name = "a", ph = "X", pid = 1, tid = 1, ts = 0, dur = 10 },
      { name = "b", ph = "X", pid = 1, tid = 2, ts = 5, dur = 10 },
    })
    assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
  end)

  it("rejects unknown ph, missing fields and bad metadata", function()
    for _, ev in ipairs {
      { name = "a", ph = "Q", pid = 1, tid = 1, ts = 0 },
      { name = "a", ph = "X", pid = 1, tid = 1, ts = 0 },
      { name = "a", ph = "X", pid = 1, ts = 0, dur = 1 },
      { ph = "X", pid = 1, tid = 1, ts = 0, dur = 1 },
      { name = "thread_name", ph = "M", pid = 1, tid = 1, args = {} },
      { name = "colour_of_track", ph = "M", pid = 1, args = { name = "x" } },
    } do
      local rep = tc.check(doc { ev })
      assert.is_false(rep.ok, cjson.encode(ev))
    end
  end)

  it("rejects a dispatch whose phases do not add up to named_host_ns", function()
    local rep = tc.check(doc {
      { name = "dispatch", ph = "X", pid = 1, tid = 1, ts = 0, dur = 10, args = { named_host_ns = 9000, seq = 1 } },
      { name = "prepare", ph = "X", pid = 1, tid = 1, ts = 0, dur = 4 },
      { name = "ptx", ph = "X", pid = 1, tid = 1, ts = 4, dur = 4 },
      { name = "unattributed", ph = "X", pid = 1, tid = 1, ts = 8, dur = 2 },
    })
    assert.is_false(rep.ok)
    assert.matches("add to 8000 ns, named_host_ns is 9000", rep.errors[1])
  end)
end)

describe("export.trace", function()
  local records
  before_each(function() records = gen.generate() end)

  it("writes trace-event JSON that checks: nesting per track, phases adding to named_host_ns", function()
    local rep = trace_of(records)
    assert.are.equal(#records, #rep.dispatches)
    local seen = by_seq(rep)
    for _, r in ipairs(records) do
      local d = assert(seen[r.seq], "no dispatch slice for seq " .. r.seq)
      assert.are.equal(r.named_host_ns, d.phases)
      assert.are.equal(r.wall_ns, d.slice.dur)
      assert.are.equal(math.tointeger(d.slice.ev.tid), r.tid)
    end
  end)

  it("lays phases end to end in schema order, residue last, nested regions inside ptx", function()
    local rep = trace_of(records)
    local d = by_seq(rep)[records[5].seq]
    local names, kids = children_names(d)
    assert.are.same({ "prepare", "ptx", "modkey", "stage", "resolve", "lease", "launch", "release", "readback",
      "unattributed" }, names)
    local at = d.slice.start
    for _, c in ipairs(kids) do
      assert.are.equal(at, c.start, c.name .. " does not start where the previous phase ended")
      at = c.stop
    end
    assert.are.equal(records[5].unattributed_ns, kids[#kids].dur)
    local ptx = kids[2]
    local sub = {}
    for _, g in ipairs(ptx.children or {}) do sub[#sub + 1] = g.name .. "=" .. g.dur end
    table.sort(sub)
    assert.are.same({ "sub_ptx_digest=" .. records[5].sub_ptx_digest_ns, "sub_ptx_vsa=" .. records[5].sub_ptx_vsa_ns },
      sub)
    assert.are.equal(2, ptx.children[1].depth)
  end)

  it("says in its metadata how phases and device slices are placed", function()
    local rep = trace_of(records)
    local meta = rep.doc.metadata.phaseprobe
    assert.matches("laid end to end from its start in schema order", meta.phase_layout)
    assert.matches("unattributed", meta.phase_layout)
    assert.matches("positions are modelled", meta.device_layout)
    assert.are.equal("absolute", meta.runs[1].timestamps)
  end)

  it("puts the device window and the kernel-only window on tracks of their own", function()
    local rep = trace_of(records)
    local names = {}
    for _, ev in ipairs(rep.events) do
      if ev.ph == "M" and ev.name == "thread_name" then names[math.tointeger(ev.tid)] = ev.args.name end
    end
    local windows, kernels = {}, {}
    for _, s in ipairs(rep.slices) do
      local seq = s.ev.args and s.ev.args.seq and math.tointeger(s.ev.args.seq)
      if s.name == "device window" then windows[seq] = s end
      if s.name == "kernel" then kernels[seq] = s end
    end
    for _, r in ipairs(records) do
      local w, k = assert(windows[r.seq]), assert(kernels[r.seq])
      assert.are.equal(r.device_window_ns, w.dur)
      assert.are.equal(r.kernel_ns, k.dur)
      assert.are.equal(r.device_window_ns - r.kernel_ns, math.tointeger(w.ev.args.starvation_ns))
      assert.are_not.equal(r.tid, math.tointeger(w.ev.tid))
      assert.are_not.equal(math.tointeger(w.ev.tid), math.tointeger(k.ev.tid))
      assert.matches("^device window", names[math.tointeger(w.ev.tid)])
      assert.matches("^kernel only", names[math.tointeger(k.ev.tid)])
      -- the kernel window sits inside the device window it belongs to
      assert.is_true(k.start >= w.start and k.stop <= w.stop)
    end
  end)

  it("carries counts and cache deltas as exact slice args", function()
    records[1].kernel_floor_ns = 1234567890123456789 -- far above 2^53: exact in the file
    local _, path = trace_of(records)
    local text = slurp(path)
    assert.truthy(text:find('"kernel_floor_ns":1234567890123456789', 1, true))
    local rep = tc.check(text)
    local d = by_seq(rep)[records[3].seq]
    for _, f in ipairs { "nodes", "ptx_bytes", "fixpoint", "grid_blocks", "ptx_cache_hits", "ptx_cache_misses",
      "ptx_cache_disk_hits", "kernel_ns", "device_window_ns" } do
      assert.are.equal(records[3][f], math.tointeger(d.slice.ev.args[f]), f)
    end
    assert.are.equal("prose", d.slice.ev.args.shape)
  end)

  it("writes u64 args past 2^63-1 as strings, so int64 readers keep them", function()
    records[2].probe_ns = 0x1p64 -- 2^64 - 1 reaches Lua as the float nearest to it
    local _, path = trace_of(records)
    assert.truthy(slurp(path):find('"probe_ns":"18446744073709551615"', 1, true))
  end)

  it("writes a phase's and a region's u64 past 2^63-1 exactly in their args, and says durations saturate", function()
    local set = records_mod.from_string(
      "d seq=1 wall_ns=5 prepare_ns=18446744073709551614 ptx_ns=3 sub_ptx_digest_ns=18446744073709551615 "
      .. "named_host_ns=18446744073709551615 unattributed_ns=0\n"
      .. "d seq=2 wall_ns=9 prepare_ns=2 ptx_ns=3 sub_ptx_digest_ns=1 named_host_ns=5 unattributed_ns=4\n")
    local text = export.trace_text({ { name = "u64", set = set } })
    assert.truthy(text:find('{"args":{"prepare_ns":"18446744073709551614"},"cat":"phase"', 1, true), text)
    assert.truthy(text:find('{"args":{"sub_ptx_digest_ns":"18446744073709551615","note":', 1, true), text)
    -- the slice saturates at 2^63-1 ns, and no time runs past it (or wraps below 0)
    assert.truthy(text:find('"dur":9223372036854775.807,"name":"prepare"', 1, true))
    assert.is_nil(text:find('"ts":-', 1, true))
    assert.is_nil(text:find('"ns":9223372036854775808', 1, true))
    local doc = cjson.decode(text)
    assert.matches("past 2%^63%-1 ns saturates", doc.metadata.phaseprobe.units)
    assert.matches("keep the record's exact value", doc.metadata.phaseprobe.units)
  end)

  it("starts dispatches at start_ns relative to the run's first", function()
    local rep = trace_of(records)
    local base = records[1].start_ns
    for _, r in ipairs(records) do
      local d = by_seq(rep)[r.seq]
      assert.are.equal(r.start_ns - base, d.slice.start)
    end
    assert.are.equal(base, math.tointeger(rep.doc.metadata.phaseprobe.runs[1].time_base_ns))
  end)

  it("lays dispatches end to end when start_ns is absent, and says so", function()
    records = gen.generate { start = false }
    local rep = trace_of(records)
    local at = 0
    for _, r in ipairs(records) do
      local d = by_seq(rep)[r.seq]
      assert.are.equal(at, d.slice.start)
      at = d.slice.stop
    end
    local run = rep.doc.metadata.phaseprobe.runs[1]
    assert.are.equal("end_to_end", run.timestamps)
    assert.matches("laid end to end", run.note)
  end)

  it("lays out end to end a run whose start_ns span too much time for exact timestamps", function()
    records[1].start_ns = 1234567890123456789
    local rep = trace_of(records)
    local run = rep.doc.metadata.phaseprobe.runs[1]
    assert.are.equal("end_to_end", run.timestamps)
    assert.matches("more than 2%^50 ns", run.note)
  end)

  it("takes the reference's own lines (no tid, no start_ns)", function()
    local text = {}
    for _, r in ipairs(gen.set(records)) do
      -- the reference's line ends at ptx_cache_misses
      text[#text + 1] = tostring(r):match("^(.- ptx_cache_misses=%d+)")
    end
    local refs = records_mod.from_string(table.concat(text, "\n"))
    assert.is_nil(refs[1].tid)
    local rep = trace_of(refs)
    assert.are.equal(#refs, #rep.dispatches)
    assert.are.equal("end_to_end", rep.doc.metadata.phaseprobe.runs[1].timestamps)
    local found
    for _, ev in ipairs(rep.events) do
      if ev.name == "thread_name" and ev.args.name == "host thread (tid not recorded)" then found = true end
    end
    assert.is_true(found)
  end)

  it("gives each host thread its own track and each run its own process", function()
    local other = gen.generate { seed = 11 }
    for i, r in ipairs(records) do
      if i % 2 == 0 then r.tid = r.tid + 1 end
    end
    local path = tmp("runs.json")
    assert(export.trace_runs({ { name = "first.log", set = gen.set(records) },
      { name = "second.log", set = gen.set(other) } }, path))
    local rep = tc.check(slurp(path))
    assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
    local procs, hosts = {}, {}
    for _, ev in ipairs(rep.events) do
      if ev.name == "process_name" then procs[math.tointeger(ev.pid)] = ev.args.name end
    end
    assert.are.same({ "first.log", "second.log" }, procs)
    for _, d in ipairs(rep.dispatches) do
      local key = math.tointeger(d.slice.ev.pid) .. "/" .. math.tointeger(d.slice.ev.tid)
      hosts[key] = (hosts[key] or 0) + 1
    end
    local keys = {}
    for k in pairs(hosts) do keys[#keys + 1] = k end
    assert.are.equal(3, #keys) -- two threads in the first run, one in the second
  end)

  it("keeps a track free of overlaps when recorded starts collide", function()
    records[2].start_ns = records[1].start_ns + 10 -- inside the first dispatch
    local rep = trace_of(records)
    local d2 = by_seq(rep)[records[2].seq]
    assert.are.equal(records[1].wall_ns - 10, math.tointeger(d2.slice.ev.args.shifted_ns))
  end)

  it("stretches a dispatch whose phases exceed wall_ns, and says so", function()
    records[1].wall_ns = records[1].named_host_ns - 1000
    records[1].unattributed_ns = 0
    local rep = trace_of(records)
    local d = by_seq(rep)[records[1].seq]
    assert.are.equal(records[1].named_host_ns, d.slice.dur)
    assert.matches("exceed wall_ns", d.slice.ev.args.note)
  end)

  it("follows a declared schema: its phases, and nested regions inside their phase", function()
    pp.schema { prefix = "mini", phases = { "parse", "compile", "run" }, nested = { "compile_opt" },
      counts = { "size" } }
    pp.enable()
    pp.store.clear()
    for i = 1, 3 do
      pp.begin()
      pp.add_ns("parse", 100 * i)
      pp.add_ns("compile", 1000 * i)
      pp.add_nested_ns("compile_opt", 400 * i)
      pp.add_ns("run", 50)
      pp.counts { size = i }
      pp.emit { seq = i, wall_ns = 1200 * i + 100 }
    end
    pp.use(pp.default_schema())
    local rep = trace_of(pp.store.records(), "mini.json")
    local d = by_seq(rep)[2]
    local names, kids = children_names(d)
    assert.are.same({ "parse", "compile", "run", "unattributed" }, names)
    assert.are.equal("sub_compile_opt", kids[2].children[1].name)
    assert.are.equal(800, kids[2].children[1].dur)
  end)

  it("raises on misuse and returns nil, message when the file cannot be written", function()
    assert.has_error(function() export.trace("records", tmp("x.json")) end)
    assert.has_error(function() export.trace(records[1], tmp("x.json")) end)
    assert.has_error(function() export.trace(records, tmp("x.json")) end) -- a list, not a set
    assert.has_error(function() export.trace(gen.set(records)) end)
    local ok, err = export.trace(gen.set(records), tmp("no/such/dir/t.json"))
    assert.is_nil(ok)
    assert.matches("cannot write", err)
  end)
end)

-- same keys, same values, same Lua types
local function same_record(a, b, where)
  for k, v in pairs(a) do
    assert.are.equal(v, b[k], where .. ": field " .. k)
    assert.are.equal(math.type(v) or type(v), math.type(b[k]) or type(b[k]), where .. ": type of " .. k)
  end
  for k in pairs(b) do assert.is_not_nil(a[k], where .. ": extra field " .. k) end
end

for _, fmt in ipairs { "csv", "jsonl" } do
  local read = export["read_" .. fmt]
  describe(fmt .. " export", function()
    it("round-trips generated records: same fields, values, types and lines", function()
      local records = gen.generate()
      local set = gen.set(records)
      local path = tmp("r." .. fmt)
      assert(export[fmt](set, path))
      local back = assert(read(path))
      assert.is_true(records_mod.is_set(back))
      assert.are.equal(#records, #back)
      for i = 1, #records do
        same_record(records[i], back[i], "record " .. i)
        assert.are.equal(tostring(set[i]), tostring(back[i]))
        assert.are.equal(path, back:columns():get(back:row(i), "@file"))
      end
    end)

    it("keeps u64 values exact, above 2^53 and above 2^63", function()
      local records = gen.generate { per_size = 1 }
      local r = records[1]
      r.start_ns = 9007199254740993 -- 2^53 + 1
      r.wall_ns = math.maxinteger -- 2^63 - 1
      r.probe_ns = 0x1p64 -- 2^64 - 1, as the C module pushes it (the float nearest to it)
      r.kernel_floor_ns = 100000000000001 -- 15 digits: cjson's own encoder would round it
      local path = tmp("big." .. fmt)
      assert(export[fmt](gen.set(records), path))
      local text = slurp(path)
      for _, digits in ipairs { "9007199254740993", "9223372036854775807", "18446744073709551615",
        "100000000000001" } do
        assert.truthy(text:find(digits, 1, true), digits .. " not in the file")
      end
      local back = assert(read(path))
      same_record(r, back[1], "record 1")
      assert.are.equal("18446744073709551615", back[1]:_text("probe_ns"))
    end)

    it("keeps strings strings, numbers numbers, floats floats", function()
      local list = {
        { seq = 1, ratio = 0.1, whole = 3.0, size = "128", odd = 'a,"b"\nc\\d' },
        { seq = 2, ratio = 1e-300, whole = -2.5e17, size = "", odd = "é ☃" },
      }
      local set = records_mod.from_list(list,
        { prefix = "x", fields = { "seq", "ratio", "whole", "size", "odd" }, text = "any" })
      local path = tmp("types." .. fmt)
      assert(export[fmt](set, path))
      local back = assert(read(path, { prefix = "x" }))
      for i = 1, 2 do same_record(list[i], back[i], "record " .. i) end
      assert.are.equal(tostring(set[1]), tostring(back[1]))
    end)

    it("takes record sets only: a list of records is made one with records.from_list", function()
      local records = gen.generate { per_size = 1 }
      local set = gen.set(records)
      assert(export[fmt](set, tmp("a." .. fmt)))
      local ok, err = pcall(export[fmt], records, tmp("b." .. fmt))
      assert.is_false(ok)
      assert.matches("expected a record set", err)
      -- records of the set, emitted records and parsed rows: the same file
      local copy = records_mod.from_list(set:records())
      assert(export[fmt](copy, tmp("c." .. fmt)))
      assert.are.equal(slurp(tmp("a." .. fmt)), slurp(tmp("c." .. fmt)))
    end)

    it("writes an empty set as an empty file that reads back empty", function()
      assert(export[fmt](records_mod.from_list({}), tmp("empty." .. fmt)))
      assert.are.equal("", slurp(tmp("empty." .. fmt)))
      assert.are.equal(0, assert(read(tmp("empty." .. fmt))):count())
    end)

    it("refuses values no format can hold, naming record and field", function()
      -- (a set of lines holds no NaN: only one made with text = "any" does)
      local bad = records_mod.from_list({ { seq = 1, x = 0 / 0 } }, { text = "any" })
      local ok, err = pcall(export[fmt], bad, tmp("bad." .. fmt))
      assert.is_false(ok)
      assert.matches("record 1, field 'x'", err)
      ok, err = pcall(records_mod.from_list, { { seq = 1, x = 0 / 0 } })
      assert.is_false(ok)
      assert.matches("field 'x': a number that is not finite", err)
      -- a value no record holds never gets as far as a set
      ok, err = pcall(records_mod.from_list, { { seq = 1, flag = true } })
      assert.is_false(ok)
      assert.matches("field 'flag'", err)
    end)

    it("says which file cannot be read", function()
      local ok, err = read(tmp("missing." .. fmt))
      assert.is_nil(ok)
      assert.matches("missing%." .. fmt, err)
    end)
  end)
end

describe("JSON lines", function()
  it("are one cjson-readable object per line, keys in line order", function()
    local records = gen.generate { per_size = 1 }
    local path = tmp("k.jsonl")
    assert(export.jsonl(gen.set(records), path))
    local n = 0
    for line in io.lines(path) do
      n = n + 1
      local obj = cjson.decode(line)
      assert.are.equal(records[n].shape, obj.shape)
      assert.are.equal(records[n].ptx_ns, math.tointeger(obj.ptx_ns))
      assert.matches('^{"seq":%d+,"nodes":', line)
    end
    assert.are.equal(#records, n)
  end)

  it("name the line that is not JSON or not a record", function()
    spit(tmp("bad.jsonl"), '{"seq":1}\n\n{"seq":2,}\n')
    local ok, err = export.read_jsonl(tmp("bad.jsonl"))
    assert.is_nil(ok)
    assert.matches("bad%.jsonl:3: not JSON", err)
    spit(tmp("bad2.jsonl"), '{"seq":1}\n[1,2]\n')
    ok, err = export.read_jsonl(tmp("bad2.jsonl"))
    assert.matches("bad2%.jsonl:2: expected a JSON object", err)
    spit(tmp("bad3.jsonl"), '{"seq":1,"x":{"y":1}}\n')
    ok, err = export.read_jsonl(tmp("bad3.jsonl"))
    assert.matches("bad3%.jsonl:1: field 'x'", err)
    spit(tmp("bad4.jsonl"), '{"seq":18446744073709551616}\n')
    ok, err = export.read_jsonl(tmp("bad4.jsonl"))
    assert.matches("bad4%.jsonl:1: field 'seq': 18446744073709551616 does not fit", err)
  end)
end)

describe("CSV", function()
  it("quotes strings, leaves numbers bare, and writes a header in line order", function()
    local records = gen.generate { per_size = 1 }
    local path = tmp("h.csv")
    assert(export.csv(gen.set(records), path))
    local header, first = slurp(path):match("^([^\n]*)\n([^\n]*)")
    matches_all(header, { "^seq,nodes,ptx_bytes,", ",shape$" })
    matches_all(first, { ',"prose"$', '^%d+,1800,' })
  end)

  it("reads what other tools write: CRLF, a byte order mark, quoted newlines, blank lines", function()
    spit(tmp("other.csv"), '\239\187\191seq,name,n\r\n1,"multi\r\nline",5\r\n\r\n2,plain,6\r\n')
    local back = assert(export.read_csv(tmp("other.csv")))
    assert.are.equal(2, #back)
    assert.are.equal("multi\r\nline", back[1].name)
    assert.are.equal("plain", back[2].name)
    assert.are.equal(6, back[2].n)
    assert.are.equal("integer", math.type(back[2].n))
  end)

  it("names file and line of malformed input", function()
    local cases = {
      { 'seq,n\n1,2\n2,"open\n', "3: quoted field never closed" },
      { "seq,n\n1,2\n2,3,4\n", "3: 3 fields, the header has 2" },
      { 'seq,n\n1,2"x\n', "2: a quote inside an unquoted field" },
      { 'seq,n\n"1"x,2\n', "2: text after a closing quote" },
      { "seq,seq\n1,2\n", "1: column 'seq' appears twice" },
    }
    for i, c in ipairs(cases) do
      local path = tmp("m" .. i .. ".csv")
      spit(path, c[1])
      local ok, err = export.read_csv(path)
      assert.is_nil(ok, c[2])
      assert.are.equal(path .. ":" .. c[2], err)
    end
    -- an unquoted cell is read as a record line's value is: an integer past
    -- 64 bits (no number holds it exactly) stays the text it is
    spit(tmp("big.csv"), "seq,n\n1,99999999999999999999999\n")
    assert.are.equal("99999999999999999999999", assert(export.read_csv(tmp("big.csv")))[1].n)
  end)
end)

describe("the export and trace commands", function()
  local cli = require "phaseprobe.cli"
  local cmd_export = { run = function(argv) return cli.main({ "export", table.unpack(argv) }) end }
  local cmd_trace = { run = function(argv) return cli.main({ "trace", table.unpack(argv) }) end }
  local said
  local real_stderr
  before_each(function()
    said = {}
    real_stderr = io.stderr
    io.stderr = { write = function(_, ...) for _, s in ipairs { ... } do said[#said + 1] = s end end }
  end)
  after_each(function() io.stderr = real_stderr end)

  it("are modules the command can load: summary, usage, run", function()
    for _, name in ipairs { "export", "trace", "html", "plot" } do
      local m = require("phaseprobe.cli.cmd_" .. name)
      assert.are.equal("string", type(m.summary))
      assert.is_nil(m.summary:find("\n"))
      assert.matches("^usage: phaseprobe " .. name, m.usage)
      assert.are.equal("function", type(m.run))
    end
  end)

  it("export converts between formats", function()
    local records = gen.set(gen.generate { per_size = 2 })
    assert(export.jsonl(records, tmp("in.jsonl")))
    assert.are.equal(0, cmd_export.run { "--csv", "-o", tmp("out.csv"), tmp("in.jsonl") })
    assert(export.csv(records, tmp("direct.csv")))
    assert.are.equal(slurp(tmp("direct.csv")), slurp(tmp("out.csv")))
    -- the format can come from the output's extension
    assert.are.equal(0, cmd_export.run { "-o", tmp("out2.jsonl"), tmp("out.csv") })
    assert.are.equal(slurp(tmp("in.jsonl")), slurp(tmp("out2.jsonl")))
  end)

  it("trace writes one process per input", function()
    local records = gen.set(gen.generate { per_size = 1 })
    assert(export.csv(records, tmp("a.csv")))
    assert(export.jsonl(records, tmp("b.jsonl")))
    assert.are.equal(0, cmd_trace.run { tmp("a.csv"), tmp("b.jsonl"), "-o", tmp("cmd.json") })
    local rep = tc.check(slurp(tmp("cmd.json")))
    assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
    assert.are.equal(2 * #records, #rep.dispatches)
    assert.are.equal("a.csv", rep.doc.metadata.phaseprobe.runs[1].name)
  end)

  it("exit 2 on usage errors, with the usage", function()
    for _, argv in ipairs {
      {}, { "--bogus", "x.csv" }, { "--csv", "--jsonl", "x.csv" }, { "x.csv" }, { "--csv", "-o" },
    } do
      said = {}
      assert.are.equal(2, cmd_export.run(argv), table.concat(argv, " "))
      assert.matches("usage: phaseprobe export", table.concat(said))
    end
    assert.are.equal(2, cmd_trace.run {})
  end)

  it("exit 1 on bad input, naming file and line", function()
    spit(tmp("bad.csv"), "seq,n\n1,2\n2,3,4\n")
    assert.are.equal(1, cmd_trace.run { "--strict", tmp("bad.csv"), "-o", tmp("never.json") })
    assert.matches("bad%.csv:3: 3 cells, the header has 2", table.concat(said))
    said = {}
    assert.are.equal(0, cmd_trace.run { tmp("bad.csv"), "-o", tmp("once.json") })
    assert.matches("bad%.csv: 1 damaged record line %(line 3%): left out", table.concat(said))
    said = {}
    assert.are.equal(1, cmd_export.run { "--jsonl", "-o", tmp("x.jsonl"), tmp("nonexistent.csv") })
    assert.matches("nonexistent%.csv", table.concat(said))
    said = {}
    spit(tmp("hdr.csv"), "seq,n\n")
    assert.are.equal(1, cmd_export.run { "--jsonl", "-o", tmp("x.jsonl"), tmp("hdr.csv") })
    assert.matches("hdr%.csv: no record lines", table.concat(said))
  end)

  it("read probe logs through pp.parse", function()
    if not (type(pp.parse) == "table" and type(pp.parse.file) == "function") then
      pending("pp.parse.file is not in this build: probe logs as input are not checked")
      return
    end
    local records = gen.set(gen.generate { per_size = 1 })
    local text = {}
    for i, r in ipairs(records) do text[i] = tostring(r) end
    spit(tmp("run.log"), table.concat(text, "\n") .. "\n")
    assert.are.equal(0, cmd_trace.run { tmp("run.log"), "-o", tmp("log.json") }, table.concat(said))
    local rep = tc.check(slurp(tmp("log.json")))
    assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
    assert.are.equal(#records, #rep.dispatches)
  end)
end)
