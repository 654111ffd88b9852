-- What the commands print: tables within 100 columns, one number style,
-- signs as a person writes them, one error prefix, nothing printed before
-- a usage error, and the README's what-if example on the demo log.
local report = require "phaseprobe.output.report"

local DEMO = "examples/data/demo-h200.log"

local command = require "helpers.command"
local run, usage_error = command.run, command.usage_error

local widest = command.widest
local tmpfile = require("helpers.files").tmpfile
local matches_all = require("helpers.text").matches_all

-- What a printed number may not look like: a count of 4 digits or more
-- without separators ("1347"; ids after "=" and line numbers after ":" are
-- names, not counts), a value that rounds to zero with a sign ("-0%",
-- "-0.00 ns"), a time with a fraction that is not 3 significant digits
-- ("0.01 ns", "0.70 ns"), an exponent. Returns the first few, as text.
local PLURALS = {}
for w in ("records lines dispatches fields values groups points pairs cells rows bytes errors "
  .. "elements operands buffers nodes blocks SMs modules arrivals markers shapes rounds sets "
  .. "iterations tags plots summaries quantities"):gmatch("%a+") do PLURALS[w] = true end

local function style_problems(text)
  local bad = {}
  local function add(what) if #bad < 8 then bad[#bad + 1] = what end end
  -- dates, clock times, paths and hex digests are no numbers
  local t = text:gsub("%d%d%d%d%-%d%d%-%d%d", "DATE"):gsub("%d%d:%d%d:%d%d", "TIME")
    :gsub("%S*/%S*", "PATH")
  local pos = 1
  while true do
    local a, b = t:find("%d+", pos)
    if not a then break end
    local prev, nxt = t:sub(a - 1, a - 1), t:sub(b + 1, b + 1)
    local grouped = t:sub(a - 2, a - 1):match("^%d,$") or t:sub(b + 1, b + 2):match("^,%d$")
    if b - a + 1 >= 4 and not grouped and not prev:match("[%w_.=:#]") and not nxt:match("[%w_]") then
      add("ungrouped count: " .. t:sub(math.max(1, a - 20), b + 10))
    end
    pos = b + 1
  end
  for z in t:gmatch("%f[%-%w]%-0[%.0]*%f[^%d.][ %%]?%a*") do add("signed zero: " .. z) end
  for num, unit in t:gmatch("(%d[%d.,]*) ([pnum\194\181]*s)%f[%A]") do
    local digits = num:gsub("[.,]", ""):gsub("^0+", "")
    if num:find(".", 1, true) and #digits ~= 3 or #digits > 3 then
      add("not 3 significant digits: " .. num .. " " .. unit)
    end
  end
  if t:find("%de[+-]%d") then add("an exponent") end
  -- one of a thing in the plural ("1 records"; "0 of 1 dispatches" and
  -- "1 of 3 records" are how a share is said)
  for at, word in t:gmatch("()%f[%w,.]1 (%a+s)%f[%A]") do
    if PLURALS[word] and t:sub(at - 3, at - 1) ~= "of " then add("one in the plural: 1 " .. word) end
  end
  return bad
end

local LONG = string.rep("a-rather-long-directory-name/", 4)

describe("command output", function()
  it("fits 100 columns, the explanations wrapped under their row; --wide keeps them on it", function()
    local dir = require("helpers.files").tmpdir()
    local deep = dir:file(LONG)
    os.execute("mkdir -p " .. require("helpers.shell").q(deep))
    local la = deep .. "run-with-the-base-knobs-of-the-demo.log"
    local lb = deep .. "run-with-the-other-knobs-of-the-demo.log"
    for _, p in ipairs { la, lb } do
      require("helpers.files").spit(p, require("helpers.files").slurp(DEMO))
    end
    local ptx = {}
    for f in io.popen("ls examples/kernels/*.ptx"):lines() do ptx[#ptx + 1] = f end
    for _, argv in ipairs {
      { "report", DEMO }, { "fit", DEMO }, { "fit", "--phase", "ptx", DEMO },
      { "report", "--group", "shape", DEMO }, { "report", "--group", "knob", DEMO },
      { "report", "--records", "5", DEMO }, { "fit", "--group", "knob", DEMO },
      { "compare", "--by", "knob", "base", "memo_digest", DEMO },
      { "compare", "--by", "knob", "base", "memo_digest+cache_scan+skip_gate", DEMO },
      { "compare", la, lb },
      { "whatif", "--remove", "ptx_digest", "--variant", "knob=memo_digest", DEMO },
      { "whatif", "--hits", "ptx", "--remove", "ptx_digest", DEMO },
      { "ptx", table.unpack(ptx) }, { "demo" },
    } do
      local rc, out, err = run(table.unpack(argv))
      assert.are.equal(0, rc, err)
      local w, line = widest(out)
      assert.is_true(w <= 100, table.concat(argv, " ") .. ": " .. w .. " columns: " .. tostring(line))
    end
    dir:remove()
    local _, wide = run("fit", "--wide", DEMO)
    assert.is_true(widest(wide) > 100)
  end)

  it("names two files with long paths by short labels, the full names in a legend", function()
    local dir = require("helpers.files").tmpdir()
    local deep = dir:file(LONG)
    os.execute("mkdir -p " .. require("helpers.shell").q(deep))
    local la, lb = deep .. "before.log", deep .. "after.log"
    local text = require("helpers.files").slurp(DEMO)
    require("helpers.files").spit(la, text)
    require("helpers.files").spit(lb, text)
    local rc, out, err = run("compare", la, lb)
    dir:remove()
    assert.are.equal(0, rc, err)
    -- the full paths are said once each (cut over lines); the columns are
    -- headed by the files' names
    local joined = ("\n" .. out):gsub("\n    ", "")
    assert.truthy(joined:find("\n" .. la .. ": 1,350 dispatches", 1, true), out)
    assert.truthy(joined:find("\n" .. lb .. ": 1,350 dispatches", 1, true), out)
    assert.matches("\nphase +before%.log +after%.log +difference", out)
    assert.is_true(widest(out) <= 100, out)
  end)

  it("writes every number in one style: no bare counts, no signed zeros, 3 digits", function()
    for _, argv in ipairs {
      { "report", DEMO }, { "fit", DEMO }, { "fit", "--phase", "lease", DEMO },
      { "compare", "--by", "knob", "base", "memo_digest+cache_scan+skip_gate", DEMO },
      { "whatif", "--remove", "ptx_digest", "--variant", "knob=memo_digest", DEMO },
      { "whatif", "--hits", "ptx", DEMO }, { "report", "--group", "knob", DEMO }, { "demo" },
    } do
      local rc, out, err = run(table.unpack(argv))
      assert.are.equal(0, rc, err)
      local bad = style_problems(out)
      assert.are.same({}, bad, table.concat(argv, " "))
    end
    -- the checker can fail
    -- (-0.00 ns is both a signed zero and no 3 significant digits)
    assert.are.equal(6, #style_problems("4 on 1347, -0%, -0.00 ns, 0.01 ns, 403,747 ns"))
    assert.are.same({ "one in the plural: 1 records" },
      style_problems("3 lines: 1 records, 1 of 3 records, 0 of 1 dispatches, 1 record"))
  end)

  it("writes times in SI units with 3 significant digits, sub-nanosecond ones included", function()
    assert.are.equal("700 ps", report.ns(0.7))
    assert.are.equal("14.1 ps", report.ns(0.01414))
    assert.are.equal("1.50 ns", report.ns(1.5))
    assert.are.equal("404 us", report.ns(403747))
    assert.are.equal("2.09 ms", report.ns(2093234))
    assert.are.equal("9.22 Gs", report.ns(9223372036854775807))
    assert.are.equal("0 ns", report.ns(-1e-12))
    assert.are.equal("0 ns", report.dns(-1e-12))
    assert.are.equal("0.0%", report.pct(-0.0004))
    assert.are.equal("0%", report.pct(-0.004, 0))
    assert.are.equal("1,889%", report.pct(18.89, 0))
    assert.are.equal("2,286", report.num(2286))
    assert.are.equal("0", report.num(-0.0))
    assert.are.equal("404 µs", report.ns(403747, "µs"))
  end)

  it("writes times with a unit and 3 digits, counts with separators, never exponents", function()
    local _, out = run("report", DEMO)
    assert.is_nil(out:find("%de[+-]%d"), "an exponent in the report")
    assert.matches("1,352 lines: 1,350 records, 0 damaged, 2 other", out)
    assert.matches("\nprepare_ns +[%d.]+ [nu]s +[%d.]+ [num]?s", out)
    -- no number of more than 3 significant digits beside a unit
    for num, unit in out:gmatch("(%d[%d.,]*) (%a?s)%f[%A]") do
      local digits = num:gsub("[.,]", ""):gsub("^0+", "")
      assert.is_true(#digits <= 3, num .. " " .. unit)
    end
  end)

  it("prints exact integers with --raw", function()
    local path = tmpfile { "p seq=1 wall_ns=9007199254740993 big=1234567 x_ns=5",
      "p seq=2 wall_ns=1282352 big=3 x_ns=7" }
    local _, out = run("report", "--raw", "--fields", "wall_ns,x_ns,big", path)
    local _, plain = run("report", "--fields", "wall_ns,x_ns,big", path)
    os.remove(path)
    matches_all(out, { "\nwall_ns +1282352 .* 9007199254740993 +9007199256023345\n",
      "\nbig +3 .* 1234567 +1234570\n" })
    matches_all(plain, { "\nbig +3 .* 1,234,567 +1,234,570\n", "\nwall_ns +1.28 ms .* 9.01 Ms" })
  end)

  it("prints u64 values past 2^63-1 exactly with --raw", function()
    local path = tmpfile { "p seq=1 wall_ns=18446744073709551615 big=-3 x_ns=5",
      "p seq=2 wall_ns=18446744073709551613 big=18446744073709551615 x_ns=7" }
    local _, out = run("report", "--raw", "--wide", "--fields", "wall_ns,big", path)
    local _, parts = run("report", "--raw", "--fields", "wall_ns,big", path)
    local _, plain = run("report", path)
    os.remove(path)
    -- without --wide, the table too wide for 100 columns comes in parts
    assert.is_true(widest(parts) <= 100, parts)
    assert.matches("\nwall_ns +18446744073709551615 +18446744073709551615 +36893488147419103228\n", parts)
    -- the values a quantity holds, as its lines print them
    assert.matches("big %(2 of 2 values held: %-3 on 1, 18,446,744,073,709,551,615 on 1%)", plain)
    -- min, median, mean, p90, p99, max, total: exact, the interpolated ones
    -- rounded to the nearest integer (halves up)
    assert.matches("\nwall_ns +18446744073709551613 +18446744073709551614 +18446744073709551614"
      .. " +18446744073709551615 +18446744073709551615 +18446744073709551615 +36893488147419103228\n", out)
    -- a negative value beside 2^64-1: -3 + 0.9 (2^64 + 2) = 16602069666338596453.2
    assert.matches("\nbig +%-3 +9223372036854775806 +9223372036854775806 +16602069666338596453"
      .. " +18262276632972456099 +18446744073709551615 +18446744073709551612\n", out)
  end)

  it("prints the scaling table's medians and the overrun note exactly with --raw", function()
    local path = tmpfile { "p seq=1 nodes=1 x_ns=9223372036854775806 named_host_ns=4 wall_ns=5",
      "p seq=2 nodes=2 x_ns=9223372036854775807 named_host_ns=18446744073709551614 wall_ns=5",
      "p seq=3 nodes=3 x_ns=9223372036854775808 named_host_ns=4 wall_ns=18446744073709551613" }
    local _, out = run("report", "--raw", path)
    os.remove(path)
    -- the median of the three x_ns, not the float nearest it (2^63)
    assert.matches("\nx_ns +9223372036854775807 +inconclusive", out)
    assert.matches("worst: seq=2 %(.-:2%), named 18446744073709551614, wall 5%.", out)
  end)

  it("writes signs as a person does", function()
    assert.are.equal("-766 ns + 7.16 us x fixpoint", report.equation(-766, 7156, "fixpoint"))
    assert.are.equal("2.94 us - 1.20 ns x nodes", report.equation(2940, -1.2, "nodes"))
    assert.are.equal("-18.6 us", report.ns(-18600))
    assert.are.equal("+1.20 ms", report.dns(1.2e6))
    assert.are.equal("-950 ns", report.dns(-950))
    local _, out = run("report", DEMO)
    assert.is_nil(out:find("+ -", 1, true))
    assert.is_nil(out:find("- -", 1, true))
    local page = require("phaseprobe.output.html").report(
      require("phaseprobe.records").read(DEMO), {})
    assert.is_nil(page:find("+ -", 1, true))
    assert.is_nil(page:find("+ &#8722;", 1, true))
  end)

  it("names the command once in an error", function()
    local err = usage_error("whatif", "--remove", "nosuch", DEMO)
    assert.matches("^phaseprobe whatif: %-%-remove nosuch: no phase or nested region 'nosuch' "
      .. "%(valid: prepare,", err)
    assert.is_nil(err:find("phaseprobe.whatif", 1, true))
  end)

  it("takes a bad value of an option as a usage error (exit 2) that lists the valid ones", function()
    local KNOBS = "base, memo_digest, memo_digest%+cache_scan%+skip_gate"
    for _, case in ipairs {
      { { "compare", "--by", "knob", "base", "nosuch", DEMO },
        "%-%-by knob: no records with knob=nosuch %(knob here: " .. KNOBS .. "%)" },
      { { "compare", "--by", "nosuch", "a", "b", DEMO },
        "%-%-by nosuch: no field 'nosuch' in the records %(tags: kernel_src, knob, shape; fields: seq," },
      { { "whatif", "--remove", "ptx_digest", "--variant", "knob=nosuch", DEMO },
        "%-%-variant knob=nosuch: no records with knob=nosuch %(knob here: " .. KNOBS .. "%)" },
      { { "whatif", "--remove", "ptx_digest", "--variant", "nope=x", DEMO },
        "%-%-variant nope=x: no field 'nope' in the records %(tags: kernel_src, knob, shape" },
      { { "whatif", "--hits", "nope", DEMO }, "%-%-hits nope: no cache 'nope' %(valid: ptx%)" },
      { { "whatif", "--scale", "nope=0.5", DEMO },
        "%-%-scale nope=0%.5: no phase or nested region 'nope' %(valid: prepare, ptx," },
      { { "whatif", "--remove", "ptx", "--wait", "nope", DEMO },
        "%-%-wait nope: no phase 'nope' %(valid: prepare, ptx," },
      { { "report", "--group", "nope", DEMO }, "%-%-group nope: no field 'nope' in the records %(tags: kernel_src, knob" },
      { { "fit", "--group", "nope", DEMO }, "%-%-group nope: no field 'nope' in the records %(tags: kernel_src, knob" },
      { { "report", "--fields", "wall_ns,nope", DEMO },
        "%-%-fields: no field 'nope' in the records %(quantities: nodes, ptx_bytes," },
      { { "report", "--fields", "wall_ns,shape", DEMO },
        "%-%-fields: 'shape' is a tag %(text%), not a number %(quantities: nodes, ptx_bytes," },
      { { "fit", "--quantity", "nope", DEMO },
        "%-%-quantity nope: no field 'nope' in the records %(quantities: nodes, ptx_bytes," },
      { { "fit", "--quantity", "shape", DEMO },
        "%-%-quantity shape: 'shape' is a tag %(text%), not a number %(quantities: nodes," },
      { { "fit", "--phase", "bogus", DEMO }, "%-%-phase: no phase or nested region 'bogus' %(valid: prepare," },
      { { "plot", "--phase", "nope", DEMO }, "%-%-phase nope: not a phase or nested region" },
      { { "plot", "--bars", "--group", "nope", DEMO },
        "%-%-group nope: no field 'nope' in the records %(tags: kernel_src, knob, shape; fields:" },
      { { "plot", "--phase", "ptx", "--by", "nope", DEMO },
        "%-%-by nope: no field 'nope' in the records %(quantities: nodes, ptx_bytes, buffers, "
          .. "bindings, fixpoint, grid_blocks, ptx_cache_misses, kernels; other fields: seq, wall_ns," },
      { { "plot", "--phase", "ptx", "--by", "knob", DEMO },
        "%-%-by knob: 'knob' is a tag %(text%), not a number %(quantities: nodes," },
      { { "html", "--by", "nope", DEMO },
        "%-%-by nope: no field 'nope' in the records %(quantities: nodes, ptx_bytes, buffers, "
          .. "bindings, fixpoint, grid_blocks, ptx_cache_misses, kernels; other fields: seq, wall_ns," },
      { { "html", "--by", "shape", DEMO },
        "%-%-by shape: 'shape' is a tag %(text%), not a number %(quantities: nodes," },
      { { "html", "--group", "nope", DEMO },
        "%-%-group nope: no field 'nope' in the records %(tags: kernel_src, knob, shape; fields: seq," },
    } do
      local err = usage_error(table.unpack(case[1]))
      -- (a message past 100 columns goes on under its first words)
      assert.matches("^phaseprobe %a+: " .. case[2], (err:gsub("\n    ", " ")))
      assert.is_true(command.widest(err) <= 100, err)
    end
  end)

  it("wraps a long error under its first words within 100 columns; --wide keeps it whole", function()
    local rc, _, err = run("report", "--group", "nope", DEMO)
    assert.are.equal(2, rc)
    local lines = {}
    for l in err:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.is_true(#lines > 3, err)
    assert.matches("^phaseprobe report: %-%-group nope: ", lines[1])
    for i = 2, #lines - 1 do assert.matches("^    %S", lines[i]) end
    assert.are.equal("(see 'phaseprobe report --help')", lines[#lines])
    assert.is_true(command.widest(err) <= 100, err)
    local _, _, wide = run("report", "--wide", "--group", "nope", DEMO)
    assert.are.equal(2, select(2, wide:gsub("\n", "")))
    assert.are.equal((err:gsub("\n    ", " ")), wide)
  end)

  it("prints nothing on stdout before a usage error", function()
    for _, argv in ipairs {
      { "fit", "--phase", "bogus", DEMO }, { "report", "--group", "nope", DEMO },
      { "report", "--fields", "wall_ns,nope", DEMO }, { "fit", "--group", "nope", DEMO },
    } do
      local err = usage_error(table.unpack(argv))
      assert.matches(argv[3]:match("[%a]+$") == "nope" and "'nope'" or "'bogus'", err)
    end
    local _, _, err = run("fit", "--phase", "bogus", DEMO)
    assert.matches("valid: prepare, ptx, modkey", err)
  end)

  it("runs the README's what-if on the demo log, and names --base when there is no base", function()
    local rc, out, err = run("whatif", "--remove", "ptx_digest", "--variant", "knob=memo_digest", DEMO)
    assert.are.equal(0, rc, err)
    assert.matches("base: 450 records; variant knob=memo_digest: 450 records", out)
    assert.matches("projection error", out)
    local rc2, _, err2 = run("whatif", "--remove", "ptx_digest", "--variant", "knob=memo_digest",
      "--base", "nosuch", DEMO)
    assert.are.equal(2, rc2)
    assert.matches("%-%-base VALUE %(knob here: base, memo_digest%+cache_scan%+skip_gate%)", err2)
  end)
end)

describe("option values matched exactly", function()
  -- a knob whose values are u64s past 2^63-1 (floats in Lua) and a small integer
  local U, V = "18446744073709551615", "18446744073709551614"
  local LINES = {
    "p seq=1 wall_ns=100 ptx_ns=60 prepare_ns=30 knob=" .. U,
    "p seq=2 wall_ns=110 ptx_ns=62 prepare_ns=31 knob=" .. U,
    "p seq=3 wall_ns=200 ptx_ns=150 prepare_ns=30 knob=" .. V,
    "p seq=4 wall_ns=210 ptx_ns=152 prepare_ns=33 knob=" .. V,
    "p seq=5 wall_ns=300 ptx_ns=250 prepare_ns=30",
    "p seq=6 wall_ns=310 ptx_ns=255 prepare_ns=30 knob=5",
  }

  it("whatif --variant and --base find the records of a u64 past 2^63-1, and of a number", function()
    local log = tmpfile(LINES)
    local rc, out, err = run("whatif", "--remove", "ptx", "--variant", "knob=" .. U, log)
    assert.are.equal(0, rc, err)
    assert.matches("base: 1 record; variant knob=" .. U .. ": 2 records\n", out, 1, true)
    rc, out, err = run("whatif", "--remove", "ptx", "--variant", "knob=" .. U, "--base", V, log)
    assert.are.equal(0, rc, err)
    assert.matches("base: 3 records; variant knob=" .. U .. ": 2 records\n", out, 1, true)
    rc, out, err = run("whatif", "--remove", "ptx", "--variant", "knob=" .. V, "--base", "5", log)
    assert.are.equal(0, rc, err)
    assert.matches("base: 2 records; variant knob=" .. V .. ": 2 records\n", out, 1, true)
    -- a value no record has: the values there, each by its digits
    rc, _, err = run("whatif", "--remove", "ptx", "--variant", "knob=7", log)
    assert.are.equal(2, rc)
    assert.matches("no records with knob=7 (knob here: " .. U .. ", " .. V .. ", (none), 5)",
      (err:gsub("\n    ", " ")), 1, true)
    os.remove(log)
  end)

  it("compare --by takes two u64 values past 2^63-1", function()
    local log = tmpfile(LINES)
    local rc, out, err = run("compare", "--by", "knob", U, V, log)
    assert.are.equal(0, rc, err)
    assert.matches("knob=" .. U .. ": 2 dispatches, mean wall 105 ns", out, 1, true)
    assert.matches("knob=" .. V .. ": 2 dispatches, mean wall 205 ns", out, 1, true)
    rc, out, err = run("compare", "--by", "knob", "5", V, log)
    assert.are.equal(0, rc, err)
    assert.matches("knob=5: 1 dispatch, mean wall 310 ns", out, 1, true)
    os.remove(log)
  end)
end)

describe("counts in messages", function()
  local records = require "phaseprobe.records"

  it("says one of a thing in the singular", function()
    -- (one record among other lines; one line)
    local one = tmpfile { "hello", "p seq=1 wall_ns=100 a_ns=40 nodes=3", "world" }
    local rc, out = run("report", one)
    assert.are.equal(0, rc)
    assert.matches("3 lines: 1 record, 0 damaged, 2 other", out, 1, true)
    assert.are.same({}, style_problems(out))
    local only = tmpfile { "p seq=1 wall_ns=100 a_ns=40 nodes=3" }
    _, out = run("report", only)
    assert.matches("1 line: 1 record, 0 damaged, 0 other", out, 1, true)
    local none = tmpfile { "hello" }
    local rc2, _, err = run("report", none)
    assert.are.equal(1, rc2)
    assert.matches("no record lines (1 line: 0 damaged, 1 other)", err, 1, true)
    local damaged = tmpfile { "p seq=1 wall_ns=100 a_ns=40", "p seq=2 wall_ns=1x0 a_ns=40" }
    _, _, err = run("report", damaged)
    assert.matches(": 1 damaged record line (line 2): left out", err, 1, true)
    assert.matches("... and 1 more rejected line", report.parse({ total = 3, parsed = 1,
      rejected = 2, other = 0, errors = { { file = "f", line = 1, column = 1, what = "x" },
        { file = "f", line = 2, column = 1, what = "y" } } }, { limit = 1 }), 1, true)
    -- the REPL's objects
    local set = records.from_string("p seq=1 wall_ns=100 a_ns=40 k=x\np seq=2 wall_ns=90 a_ns=30 k=y")
    assert.matches("^phaseprobe.records: 2 records, 4 fields", tostring(set))
    assert.matches("^phaseprobe.records: 1 record, 4 fields", tostring(set:where("k", "x")))
    assert.matches("^phaseprobe.groups by k: 2 groups\n", tostring(set:group("k")))
    assert.matches("^phaseprobe.groups by k: 1 group\n", tostring(set:where("k", "x"):group("k")))
    assert.matches("^phaseprobe.fits: 1 field against 2 quantities\n",
      tostring(set:fits({ "seq", "wall_ns" }, { "a_ns" })))
    assert.matches("^phaseprobe.fit of y against x: 1 point, 1 distinct x",
      tostring(require("phaseprobe.analysis.fit").line({ 1 }, { 2 })))
    -- compare and whatif over groups of one dispatch
    local kv = tmpfile { "p seq=1 wall_ns=100 a_ns=40 k=x", "p seq=2 wall_ns=90 a_ns=30 k=y" }
    _, out = run("compare", "--by", "k", "x", "y", kv)
    assert.matches("k=x: 1 dispatch, mean wall", out, 1, true)
    assert.are.same({}, style_problems(out))
    _, out = run("whatif", "--remove", "a", "--variant", "k=y", "--base", "x", kv)
    assert.matches("base: 1 record; variant k=y: 1 record", out, 1, true)
    assert.matches("\n1 dispatch ", out, 1, true)
    -- a CSV row of one cell
    local csv = tmpfile { "seq,wall_ns", "1,100", "2" }
    local csvpath = csv .. ".csv"
    os.rename(csv, csvpath)
    _, _, err = run("report", csvpath)
    assert.matches(":3: 1 cell, the header has 2", err, 1, true)
    os.remove(csvpath)
    -- the dispatch area
    local P = require "phaseprobe.dispatch.program"
    local prog = P.new { name = "t", buffers = { { name = "x", role = "input", type = "u32" },
      { name = "y", role = "output", type = "u32" } }, body = { P.store("y", P.load("x")) } }
    local ok, msg = pcall(prog.evaluate, prog, { x = { 1 } }, 2)
    assert.is_false(ok)
    assert.matches("input 'x' has 1 element, expected n = 2", msg, 1, true)
    assert.matches("(2 nodes, 2 buffers, 0 grid barriers, fixpoint 1)", tostring(prog), 1, true)
    local single = setmetatable({ name = "t", nodes = 1, buffers = { {} }, barriers = 1, fixpoint = 1 },
      getmetatable(prog))
    assert.matches("(1 node, 1 buffer, 1 grid barrier, fixpoint 1)", tostring(single), 1, true)
    -- and a progress line
    assert.are.equal("1 record", require("phaseprobe.cli.progress").amount(1, "records"))
    assert.are.equal("1 summary", require("phaseprobe.cli.progress").amount(1, "summaries"))
    for _, f in ipairs { one, only, none, damaged, kv } do os.remove(f) end
  end)

  it("separates the thousands of every count in a message", function()
    local rc, _, err = run("report", "--where", "nodes>99999999", DEMO)
    assert.are.equal(1, rc)
    assert.matches("no records left after --where nodes>99999999 (1,350 records read)", err, 1, true)
    local set = records.read(DEMO)
    assert.matches("\n%(5 of 1,350 records%)$", set:view(nil, 5))
    local lines = {}
    for i = 1, 1200 do lines[i] = "no record here " .. i end
    local log = tmpfile(lines)
    _, _, err = run("report", log)
    assert.matches("no record lines (1,200 lines: 0 damaged, 1,200 other)", err, 1, true)
    for i = 1, 1200 do lines[i] = "p seq=" .. i .. " wall_ns=1x" end
    lines[#lines + 1] = "p seq=0 wall_ns=5"
    local bad = tmpfile(lines)
    _, _, err = run("report", bad)
    assert.matches(": 1,200 damaged record lines (lines 1, 2, 3, 4, 5, ...)", err:gsub("\n    ", " "), 1,
      true)
    local files = require "phaseprobe.output.files"
    local _, msg = files.slurp(DEMO, "test", 10000)
    assert.matches("is larger than 10,000 bytes", tostring(msg), 1, true)
    os.remove(log)
    os.remove(bad)
  end)

  it("a --prefix that no line starts with is a usage error naming the prefixes there", function()
    local err = usage_error("report", "--prefix", "nope", DEMO)
    assert.matches("--prefix nope: no line starts with it (the record lines start with "
      .. "vyre-cuda-dispatch-phase)", err:gsub("\n    ", " "), 1, true)
    local mixed = "spec/fixtures/logs/mixed.log"
    err = usage_error("fit", "--prefix", "nope", "--prefix", "x", DEMO, mixed)
    assert.matches("--prefix nope, --prefix x: no line starts with any of them (the record lines "
      .. "start with vyre-cuda-dispatch-phase in " .. DEMO .. "; vyre-cuda-dispatch-phase, myprobe in "
      .. mixed .. ")", err:gsub("\n    ", " "), 1, true)
    -- without --prefix, or when no line is a record line at all: an input error, as before
    local none = tmpfile { "hello", "world" }
    local rc, _, input_err = run("report", "--prefix", "nope", none)
    assert.are.equal(1, rc)
    assert.are.equal("no record lines (2 lines: 0 damaged, 2 other)\n",
      input_err:sub(-#"no record lines (2 lines: 0 damaged, 2 other)\n"))
    os.remove(none)
  end)
end)

describe("phaseprobe ptx on numbers PTX cannot hold", function()
  local PTX = [[
.version 8.0
.target sm_90
.address_size 99999999999

.visible .entry k(.param .align 3 .b8 a[16], .param .align 4 .b8 b[99999999999999999999],
  .param .u64 c)
.maxntid 99999999999, 1, 1
{
  .reg .b32 %r<9223372036854775808>;
  .reg .b64 %rd<3>;
  .shared .align 0 .b8 buf[16];
  .local .align 8 .b8 big[9223372036854775807];
  ret;
}
.global .align 18446744073709551616 .b8 g[4];
]]

  it("marks each clamped value instead of printing it as if true", function()
    local path = tmpfile(PTX)
    local rc, out, err = run("ptx", path)
    os.remove(path)
    assert.are.equal(0, rc, err)
    matches_all(out, {
      "%?%-bit addresses",
      "launch bounds: %.maxntid %?, 1, 1\n",
      "parameters: 3, %? bytes\n",
      -- a: .align 3; b: its length past 2^63-1 (so its size, and c's offset)
      "\n +1 +a +%.b8 +16 +%? +16 +0\n",
      "\n +2 +b +%.b8 +%? +4 +%? +%?\n",
      "\n +3 +c +%.u64 +8 +8 +%?\n",
      "registers: %.b32 %?, %.b64 3\n",
      -- buf: .align 0 (kept as 1); big: 2^63-1 bytes, a number PTX may hold
      "\n +buf +shared +%.b8 +16 +%? +16%s",
      "\n +big +local +%.b8 +9,223,372,036,854,775,807 +8 +9,223,372,036,854,775,807",
      "\n +g +global +%.b8 +4 +%? +4%s",
      "%(%? above: a number PTX cannot hold, named in these errors%)",
    })
    assert.is_nil(out:find("4,294,967,295", 1, true))
    assert.is_nil(out:find("-9,223", 1, true))
    assert.is_true(widest(out) <= 100, out)
  end)

  it("marks nothing in a scan without errors", function()
    local rc, out = run("ptx", "examples/kernels/params.ptx")
    assert.are.equal(0, rc)
    assert.is_nil(out:find("?", 1, true))
  end)
end)
