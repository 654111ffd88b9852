-- The export subcommands (export, trace, html, plot) run through the
-- command framework of phaseprobe.cli: its streams, options, log reading
-- and exit statuses.
local cli = require "phaseprobe.cli"

local FIXTURE = "spec/fixtures/logs/mixed.log"

local files = require "helpers.files"
local command = require "helpers.command"
local run = command.run
local text_of = files.text_of

-- the fixture's clean record lines and one other line
local function clean_log() return files.excerpt(FIXTURE, { 1, 4, 8, 14 }) end

local exists = require("helpers.files").exists

describe("the export subcommands in the command framework", function()
  it("write to the ctx's stream, one record per line of a clean log", function()
    local log = clean_log()
    local rc, out, err = run("export", "--jsonl", log)
    local rc2, out2 = run("trace", log)
    os.remove(log)
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.are.equal(3, select(2, out:gsub("\n", "")))
    assert.matches('^{"seq":0,', out)
    assert.are.equal(0, rc2)
    assert.matches('^{"traceEvents":%[', out2)
  end)

  it("print the usage after a usage error, status 2", function()
    for _, c in ipairs {
      { { "export", "--bogus", FIXTURE }, "unknown option '%-%-bogus'" },
      { { "trace" }, "no input: give one or more files, or %- for standard input" },
      { { "plot", FIXTURE }, "say %-%-phase PHASE or %-%-bars" },
      { { "html", "-o" }, "option '%-%-output' needs a value" },
    } do
      local rc, out, err = run(table.unpack(c[1]))
      assert.are.equal(2, rc, table.concat(c[1], " "))
      assert.are.equal("", out)
      assert.matches("^phaseprobe " .. c[1][1] .. ": " .. c[2] .. "\nusage: phaseprobe " .. c[1][1], err)
    end
  end)

  it("name a missing --by field with status 2", function()
    local log = clean_log()
    local rc, _, err = run("html", "--by", "no_such_field", log)
    os.remove(log)
    assert.are.equal(2, rc)
    assert.matches("%-%-by no_such_field: no record has a field 'no_such_field' %(counts: nodes", err)
  end)

  it("go on past damaged lines (named on stderr), or refuse them under --strict", function()
    local dest = os.tmpname()
    os.remove(dest)
    local rc, out, err = run("trace", "--strict", "-o", dest, FIXTURE)
    assert.are.equal(1, rc)
    assert.are.equal("", out)
    assert.is_false(exists(dest))
    local f = FIXTURE:gsub("%p", "%%%0")
    assert.matches(f .. ":5:%d+: missing field ptx_cache_misses", err)
    assert.matches("phaseprobe trace: " .. f .. ": 8 damaged record lines %(lines 5, 9, 10, 13, 15, "
      .. "%.%.%.%): refused %(%-%-strict%)\n$", err)
    local rc2, out2, err2 = run("trace", "-o", dest, FIXTURE)
    assert.are.equal(0, rc2)
    assert.are.equal("", out2)
    assert.is_true(exists(dest))
    os.remove(dest)
    assert.matches("phaseprobe trace: " .. f .. ": 8 damaged record lines .*: left out", err2)
  end)

  it("answer --help through cli.run as through the dispatcher", function()
    local cmd = require "phaseprobe.cli.cmd_plot"
    local out, err = io.tmpfile(), io.tmpfile()
    assert.are.equal(0, cli.run(cmd, "plot", { "--help" }, out, err))
    assert.are.equal("", text_of(err))
    local text = text_of(out)
    assert.are.equal(cmd.usage .. "\n", text)
    local rc, out2 = run("plot", "-h")
    assert.are.equal(0, rc)
    assert.are.equal(text, out2)
  end)
end)
