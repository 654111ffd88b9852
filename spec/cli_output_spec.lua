-- What the commands print: tables within 100 columns, one number style,
-- signs as a person writes them, one error prefix, nothing printed before
-- a usage error, and the README's what-if example on the demo log.
local report = require "phaseprobe.output.report"

local DEMO = "examples/data/demo-h200.log"

local command = require "helpers.command"
local run = command.run

local widest = command.widest
local tmpfile = require("helpers.files").tmpfile
local matches_all = require("helpers.text").matches_all

describe("command output", function()
  it("fits 100 columns, the explanations wrapped under their row; --wide keeps them on it", function()
    for _, argv in ipairs {
      { "report", DEMO }, { "fit", DEMO }, { "fit", "--phase", "ptx", DEMO },
      { "report", "--group", "shape", DEMO }, { "compare", "--by", "knob", "base", "memo_digest", DEMO },
      { "whatif", "--remove", "ptx_digest", "--variant", "knob=memo_digest", DEMO },
    } do
      local rc, out, err = run(table.unpack(argv))
      assert.are.equal(0, rc, err)
      local w, line = widest(out)
      assert.is_true(w <= 100, table.concat(argv, " ") .. ": " .. w .. " columns: " .. tostring(line))
    end
    local _, wide = run("fit", "--wide", DEMO)
    assert.is_true(widest(wide) > 100)
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
    matches_all(plain, { "\nbig +3 .* 1,234,567 +1,234,570\n", "\nwall_ns +1.28 ms .* 9007199 s" })
  end)

  it("prints u64 values past 2^63-1 exactly with --raw", function()
    local path = tmpfile { "p seq=1 wall_ns=18446744073709551615 big=-3 x_ns=5",
      "p seq=2 wall_ns=18446744073709551613 big=18446744073709551615 x_ns=7" }
    local _, out = run("report", "--raw", "--fields", "wall_ns,big", path)
    local _, plain = run("report", path)
    os.remove(path)
    -- the values a quantity holds, as its lines print them
    assert.matches("big %(2 of 2 values held: %-3 on 1, 18446744073709551615 on 1%)", plain)
    -- min, median, mean, p90, p99, max, total: exact, the interpolated ones
    -- rounded to the nearest integer (halves up)
    assert.matches("\nwall_ns +18446744073709551613 +18446744073709551614 +18446744073709551614"
      .. " +18446744073709551615 +18446744073709551615 +18446744073709551615 +36893488147419103228\n", out)
    -- a negative value beside 2^64-1: -3 + 0.9 (2^64 + 2) = 16602069666338596453.2
    assert.matches("\nbig +%-3 +9223372036854775806 +9223372036854775806 +16602069666338596453"
      .. " +18262276632972456099 +18446744073709551615 +18446744073709551612\n", out)
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
    local rc, out, err = run("whatif", "--remove", "nosuch", DEMO)
    assert.are.equal(1, rc)
    assert.are.equal("", out)
    assert.matches("^phaseprobe whatif: no phase or nested region 'nosuch' %(known: prepare,", err)
    assert.is_nil(err:find("phaseprobe.whatif", 1, true))
  end)

  it("prints nothing on stdout before a usage error", function()
    for _, argv in ipairs {
      { "fit", "--phase", "bogus", DEMO }, { "report", "--group", "nope", DEMO },
      { "report", "--fields", "wall_ns,nope", DEMO }, { "fit", "--group", "nope", DEMO },
    } do
      local rc, out, err = run(table.unpack(argv))
      assert.are.equal(2, rc, table.concat(argv, " "))
      assert.are.equal("", out, table.concat(argv, " "))
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
    assert.are.equal(1, rc2)
    assert.matches("%-%-base VALUE %(knob here: base, memo_digest%+cache_scan%+skip_gate%)", err2)
  end)
end)
