-- The phaseprobe command: exit status 0/1/2, messages naming file and line,
-- subcommands, and the cmd_<name> extension point.
local pp = require "phaseprobe"
local cli = require "phaseprobe.cli"

local FIXTURE = "spec/fixtures/logs/mixed.log"
local ROOT = os.getenv("PWD") or "."

local shell = require "helpers.shell"
local sh, q = shell.status, shell.q

local function capture()
  local buf = {}
  return { write = function(self, ...)
    for _, s in ipairs({ ... }) do buf[#buf + 1] = tostring(s) end
    return self
  end, flush = function() end, text = function() return table.concat(buf) end }
end

local function run(...)
  local out, err = capture(), capture()
  local rc = cli.main({ ... }, out, err)
  return rc, out.text(), err.text()
end

local tmpfile = require("helpers.files").tmpfile
local matches_all = require("helpers.text").matches_all

-- the fixture's clean record lines and one other line
local function clean_log() return require("helpers.files").excerpt(FIXTURE, { 1, 4, 8, 14 }) end

describe("phaseprobe exit status", function()
  it("is 0 on a clean log, with the report on stdout", function()
    local log = clean_log()
    local rc, out, err = run("report", log)
    os.remove(log)
    assert.are.equal(0, rc)
    assert.are.equal("", err)
    matches_all(out, { "4 lines: 3 records, 0 damaged, 1 other", "== time per dispatch, by phase",
      "\nptx_ns ", "== scaling", "== host starvation" })
  end)

  it("is 0 with damaged lines: counted, the first few named as file:line:column, left out", function()
    local rc, out, err = run("report", FIXTURE)
    assert.are.equal(0, rc)
    assert.matches("19 lines: 4 records, 8 damaged, 7 other", out)
    local f = FIXTURE:gsub("%p", "%%%0")
    assert.matches(f .. ":5:%d+: missing field ptx_cache_misses", err)
    assert.matches(f .. ":9:%d+: field 'wall_ns': bad number '12x5'", err)
    -- five named, then the count with the first line numbers (a message
    -- past 100 columns goes on on an indented line)
    local joined = err:gsub("\n    ", " ")
    assert.are.equal(6, select(2, joined:gsub("\n", "\n")))
    assert.matches("\nphaseprobe report: " .. f .. ": 8 damaged record lines %(lines 5, 9, 10, 13, 15, "
      .. "%.%.%.%): left out %(%-%-strict refuses them%)\n$", joined)
  end)

  it("is 1 with damaged lines under --strict, before any output", function()
    local rc, out, err = run("report", "--strict", FIXTURE)
    assert.are.equal(1, rc)
    assert.are.equal("", out)
    assert.matches(": 8 damaged record lines %(lines 5, 9, 10, 13, 15, %.%.%.%): refused %(%-%-strict%)\n$",
      (err:gsub("\n    ", " ")))
    local rc2 = run("report", "--lenient", FIXTURE)
    assert.are.equal(0, rc2)
  end)

  it("is 1 for an unreadable file or one without records, naming it", function()
    local rc, _, err = run("report", "/nonexistent/run.log")
    assert.are.equal(1, rc)
    assert.are.equal("phaseprobe report: /nonexistent/run.log: No such file or directory\n", err)
    local empty = tmpfile("nothing here\n\n")
    local rc2, _, err2 = run("fit", empty)
    os.remove(empty)
    assert.are.equal(1, rc2)
    assert.matches(": no record lines %(2 lines: 0 damaged, 2 other%)", err2)
  end)

  it("is 2 for usage errors", function()
    local cases = {
      { { "report" }, "no input: give one or more files" },
      { { "report", "--bogus", FIXTURE }, "unknown option '%-%-bogus'" },
      { { "report", "--group" }, "option '%-%-group' needs a value" },
      { { "report", "--lenient=yes", FIXTURE }, "option '%-%-lenient' takes no value" },
      { { "whatif", FIXTURE }, "give at least one step" },
      { { "whatif", "--scale", "ptx", FIXTURE }, "%-%-scale 'ptx': expected name=value" },
      { { "whatif", "--scale", "ptx=abc", FIXTURE }, "expected a number" },
      { { "compare", FIXTURE }, "give two files" },
      { { "frobnicate" }, "unknown command 'frobnicate'" },
    }
    for _, c in ipairs(cases) do
      local rc, _, err = run(table.unpack(c[1]))
      assert.are.equal(2, rc, table.concat(c[1], " "))
      assert.matches(c[2], err)
    end
    local rc = run()
    assert.are.equal(2, rc)
  end)

  it("lists every command of its folder, with one convention and no shell", function()
    local files = {}
    local p = io.popen("ls lua/phaseprobe/cli")
    for f in p:lines() do
      local name = f:match("^cmd_([%w_]+)%.lua$")
      if name then files[#files + 1] = name end
    end
    p:close()
    table.sort(files)
    local listed = {}
    for i, n in ipairs(cli.COMMANDS) do listed[i] = n end
    table.sort(listed)
    assert.are.same(files, listed)
    for _, n in ipairs(cli.COMMANDS) do
      local cmd = cli.command(n)
      assert.are.equal("function", type(cmd.run), n)
      assert.are.equal("string", type(cmd.summary), n)
      assert.matches("^usage: phaseprobe " .. n, cmd.usage)
    end
    for f in io.popen("ls lua/phaseprobe/cli/*.lua"):lines() do
      local text = assert(io.open(f)):read("a")
      assert.is_nil(text:find("popen", 1, true), f)
      assert.is_nil(text:find("cliutil", 1, true), f)
    end
  end)

  it("answers --help for the command and each subcommand with status 0", function()
    local rc, out = run("--help")
    assert.are.equal(0, rc)
    for _, name in ipairs(cli.COMMANDS) do assert.matches("\n  " .. name .. " ", out) end
    assert.matches("Exit status: 0 done %(damaged lines, if any, were reported and left out%);", out)
    assert.matches("%-%-strict", out)
    for _, name in ipairs(cli.COMMANDS) do
      local rc2, out2 = run(name, "--help")
      assert.are.equal(0, rc2)
      assert.matches("^usage: phaseprobe " .. name, out2)
    end
    local rc3, out3 = run("help", "fit")
    assert.are.equal(0, rc3)
    assert.matches("Theil%-Sen", out3)
  end)
end)

describe("phaseprobe subcommands", function()
  it("compares two files and two values of a field", function()
    local a = tmpfile("d wall_ns=100 kernel_ns=0 x_ns=60 y_ns=40\nd wall_ns=100 kernel_ns=0 x_ns=60 y_ns=40\n")
    local b = tmpfile("d wall_ns=300 kernel_ns=0 x_ns=260 y_ns=40\n")
    local rc, out = run("compare", a, b)
    assert.are.equal(0, rc)
    assert.matches("difference per dispatch %(.-%): %+200 ns", out)
    assert.matches("\nx_ns%s+60 ns%s+260 ns%s+%+200 ns%s+100.0%%", out)
    local rc2, out2 = run("compare", "--by", "shape", "prose", "cjk", FIXTURE, "--lenient")
    assert.are.equal(0, rc2)
    assert.matches("shape=prose: 1 dispatch,", out2)
    local rc3, _, err3 = run("compare", "--by", "shape", "prose", "latin", FIXTURE, "--lenient")
    assert.are.equal(2, rc3)
    assert.matches("no records with shape=latin", err3)
    os.remove(a)
    os.remove(b)
  end)

  it("fits, projects and checks a projection against a variant", function()
    local rc, out = run("fit", "--lenient", "--phase", "ptx", FIXTURE)
    assert.are.equal(0, rc)
    assert.matches("== fits of ptx_ns", out)
    local rc2, out2 = run("whatif", "--lenient", "--remove", "ptx_digest", "--where", "shape=cjk", FIXTURE)
    assert.are.equal(0, rc2)
    assert.matches("remove ptx_digest%s+%-918 us%s+%-918 us", out2)
    assert.matches("wall per dispatch%s+2.09 ms%s+1.17 ms", out2)
    local rc3, out3 = run("whatif", "--lenient", "--remove", "ptx_digest", "--variant",
      "knob=memo_digest", "--base", "none", "--prefix", "vyre-cuda-dispatch-phase", FIXTURE)
    assert.are.equal(0, rc3)
    -- base: seq 0 (no knob) and seq 2 (knob=none); variant: seq 5
    assert.matches("base: 2 records; variant knob=memo_digest: 1 record\n", out3)
    -- projected (2090 - 918 + 470 - 240) / 2 = 701 us against 2.09 ms measured
    assert.matches("wall per dispatch%s+1.28 ms%s+701 us%s+%-45.2%%%s+2.09 ms%s+%-66.5%%", out3)
    local rc4, _, err4 = run("whatif", "--lenient", "--remove", "nosuch", FIXTURE)
    assert.are.equal(2, rc4)
    assert.matches("no phase or nested region 'nosuch'", err4)
    local rc5, _, err5 = run("report", "--lenient", "--where", "shape=latin", FIXTURE)
    assert.are.equal(1, rc5)
    assert.matches("no records left after %-%-where shape=latin", err5)
  end)

  it("runs the PTX scanner when the module has one, and says so when not", function()
    local text = ".version 8.0\n.target sm_90\n"
    local ptx = tmpfile(text)
    local saved = pp.ptx.scan
    pp.ptx.scan = nil
    local rc, _, err = run("ptx", ptx)
    assert.are.equal(1, rc)
    assert.matches("pp.ptx.scan is not available", err)
    local rc2, out2 = run("ptx", ptx)
    pp.ptx.scan = saved
    os.remove(ptx)
    assert.are.equal(1, rc2)
    assert.are.equal("", out2)
  end)

  it("prints what ptx --help promises: each entry's launch bounds, parameters, registers, counts", function()
    local oracle = require "helpers.ptx_oracle"
    local files = { "examples/kernels/shared.ptx", "examples/kernels/params.ptx",
                    "spec/fixtures/ptx/syncs-G.ptx" }
    local rc, out = run("ptx", "--raw", table.unpack(files))
    assert.are.equal(0, rc)
    local seen = 0
    for _, f in ipairs(files) do
      local r = pp.ptx.scan(oracle.read(f))
      local part = out:match("== " .. f:gsub("%p", "%%%0") .. "\n(.-)\n== ") or out:match("== " .. f:gsub("%p", "%%%0") .. "\n(.*)$")
      assert.is_not_nil(part, f)
      assert.matches("PTX " .. r.version:gsub("%.", "%%.") .. ", target " .. r.target, part)
      assert.matches("grid sync: " .. (r.grid_sync and "yes" or "no"), part, 1, true)
      for _, e in ipairs(r.entries) do
        local block = part:match("\nentry " .. e.name .. " (.-)\n\n") or part:match("\nentry " .. e.name .. " (.*)$")
        assert.is_not_nil(block, f .. ": " .. e.name)
        assert.matches("line " .. e.line .. ", column " .. e.col, block, 1, true)
        if e.maxntid then
          assert.matches(".maxntid " .. table.concat(e.maxntid, ", "), block, 1, true)
        end
        if e.minnctapersm then assert.matches(".minnctapersm " .. e.minnctapersm, block, 1, true) end
        if not (e.maxntid or e.reqntid or e.minnctapersm or e.maxnreg) then
          assert.matches("launch bounds: none declared", block, 1, true)
        end
        for i, p in ipairs(e.params) do
          local row = ("\n%%s+%d%%s+%s%%s+%s%%s+%d%%s+%d%%s+"):format(i, p.name:gsub("%p", "%%%0"),
            p.type:gsub("%p", "%%%0"), p.size, p.align)
            .. (p.array > 0 and (p.array .. "%s+") or "") .. p.offset .. "\n"
          assert.matches(row, block .. "\n", nil, nil, f .. ": " .. e.name .. " param " .. i)
        end
        for class, n in pairs(e.registers) do
          assert.matches(class .. " " .. n, block, 1, true)
        end
        assert.matches("instructions " .. e.instructions .. ":", block, 1, true)
        assert.matches("grid syncs " .. e.grid_syncs, block, 1, true)
        assert.matches("shared " .. e.shared_bytes .. " bytes", block, 1, true)
        for _, v in ipairs(e.vars) do assert.matches(v.name, block, 1, true) end
        seen = seen + 1
      end
      for _, g in ipairs(r.globals) do assert.matches("\n%s+" .. g.name .. "%s+" .. g.space, part) end
      for _, fn in ipairs(r.funcs) do assert.matches(fn, part, 1, true) end
    end
    assert.are.equal(6, seen)
    -- the debug code's three grid syncs
    assert.matches("entry debug_syncs .-grid syncs 3", out)
  end)

  it("prints a partial scan's errors as file:line:column, exit status 1 under --strict", function()
    local bad = tmpfile(".version 8.0\n.target sm_90\n.address_size 64\n"
      .. ".visible .entry k(.param .align 3 .b8 k_p[8]) { ret; }\n")
    local rc, out, err = run("ptx", bad)
    assert.are.equal(0, rc)
    assert.matches(bad .. ":4:33: .align 3: an alignment must be a power of two", out, 1, true)
    assert.matches("partial scan: " .. bad .. ":4:33:", err, 1, true)
    local rc2, out2 = run("ptx", "--strict", bad)
    os.remove(bad)
    assert.are.equal(1, rc2)
    assert.matches("entry k ", out2, 1, true)
  end)

  it("runs the demo module's main with the arguments, or says it is absent", function()
    local saved_path, saved_loaded = package.path, package.loaded["phaseprobe.dispatch.demo"]
    package.loaded["phaseprobe.dispatch.demo"] = nil
    package.path = "/nonexistent/?.lua"
    local rc, _, err = run("demo")
    package.path = saved_path
    assert.are.equal(1, rc)
    assert.matches("the demo module %(phaseprobe%.dispatch%.demo%) is not installed", err)
    local seen
    package.preload["phaseprobe.dispatch.demo"] = function()
      return { main = function(args) seen = args; return 3 end }
    end
    local rc2 = run("demo", "--fast", "x")
    package.preload["phaseprobe.dispatch.demo"] = nil
    package.loaded["phaseprobe.dispatch.demo"] = saved_loaded
    assert.are.equal(3, rc2)
    assert.are.same({ "--fast", "x" }, seen)
  end)
end)

describe("bin/phaseprobe", function()
  it("runs from the checkout from any directory, reading stdin with -", function()
    local rc, out = sh("cd /tmp && " .. q(ROOT .. "/bin/phaseprobe") .. " report - < "
      .. q(ROOT .. "/" .. FIXTURE))
    assert.are.equal(0, rc)
    assert.matches("%(stdin%):5:%d+: missing field", out)
    assert.matches("19 lines: 4 records", out)
    local rc2 = sh("cd /tmp && " .. q(ROOT .. "/bin/phaseprobe") .. " report --nope x")
    assert.are.equal(2, rc2)
    local rc3 = sh(q(ROOT .. "/bin/phaseprobe") .. " --help")
    assert.are.equal(0, rc3)
  end)

  it("takes subcommands from cmd_<name> modules on the Lua path", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. q(dir .. "/phaseprobe/cli")))
    local f = assert(io.open(dir .. "/phaseprobe/cli/cmd_hello.lua", "w"))
    f:write([[return { summary = "says hello", usage = "usage: phaseprobe hello NAME",
      run = function(args, ctx)
        if not args[1] then ctx.usage("who?") end
        ctx.write("hello ", args[1], "\n")
        return 0
      end }]])
    f:close()
    local env = "LUA_PATH=" .. q(dir .. "/?.lua;;") .. " "
    local bin = q(ROOT .. "/bin/phaseprobe")
    local rc, out = sh(env .. bin .. " hello world")
    assert.are.equal(0, rc)
    assert.are.equal("hello world\n", out)
    local rc2, out2 = sh(env .. bin .. " hello")
    assert.are.equal(2, rc2)
    assert.matches("phaseprobe hello: who%?", out2)
    local _, out3 = sh(env .. bin .. " --help")
    assert.is_nil(out3:find("\n  hello", 1, true))
    local _, out4 = sh(env .. "PHASEPROBE_COMMANDS=hello " .. bin .. " --help")
    assert.matches("\n  hello%s+says hello", out4)
    os.execute("rm -rf " .. q(dir))
  end)

  it("works installed, away from the checkout", function()
    local dest = os.tmpname()
    os.remove(dest)
    local rc = sh("make -s install DESTDIR=" .. q(dest) .. " PREFIX=/usr/local >/dev/null")
    assert.are.equal(0, rc)
    local lua_dir = dest .. "/usr/local/share/lua/5.4"
    local env = "LUA_PATH=" .. q(lua_dir .. "/?.lua;" .. lua_dir .. "/?/init.lua;;")
      .. " LUA_CPATH=" .. q(dest .. "/usr/local/lib/lua/5.4/?.so;;") .. " "
    local rc2, out2 = sh("cd /tmp && " .. env .. q(dest .. "/usr/local/bin/phaseprobe")
      .. " fit --lenient " .. q(ROOT .. "/" .. FIXTURE))
    os.execute("rm -rf " .. q(dest))
    assert.are.equal(0, rc2)
    assert.matches("\nptx_ns%s+1.00 ms%s+inconclusive", out2)
  end)

  -- The same command under a pseudo-terminal (script) and with stderr in
  -- a pipe: the progress line only in the first, never in a file or a
  -- pipe. Returns what the terminal got.
  local function both(cmd)
    local files = require "helpers.files"
    cmd = "export PHASEPROBE_PROGRESS=; " .. cmd
    local t, p = os.tmpname(), os.tmpname()
    -- (the two at once)
    local rc = sh("( script -qec " .. q(cmd) .. " /dev/null > " .. q(t) .. " 2>&1; echo $? >> "
      .. q(t) .. ".rc ) & ( " .. cmd .. " ) > " .. q(p) .. " 2>&1; echo $? > " .. q(p) .. ".rc; wait")
    assert.are.equal(0, rc)
    local tty, piped = files.slurp(t), files.slurp(p)
    assert.are.equal("0\n", files.slurp(t .. ".rc"), tty)
    assert.are.equal("0\n", files.slurp(p .. ".rc"), piped)
    for _, f in ipairs { t, p, t .. ".rc", p .. ".rc" } do os.remove(f) end
    assert.is_nil(piped:find("\r", 1, true), piped)
    assert.is_nil(piped:find("phaseprobe", 1, true), piped)
    assert.matches("\r\27%[K", tty) -- the line is cleared at the end
    return tty
  end

  it("shows progress for a step over a second on a terminal only, with rate and estimate", function()
    local bin = q(ROOT .. "/bin/phaseprobe")
    local files = require "helpers.files"
    -- a log read slowly from a pipe (standard input)
    local line = "p wall_ns=123456 x=1\n"
    local big = tmpfile(string.rep(line, (8 << 20) // #line))
    local tty = both("(cat " .. q(big) .. "; sleep 1.3; cat " .. q(big) .. ") | " .. bin
      .. " report --fields wall_ns - >/dev/null")
    assert.matches("\rphaseprobe report: reading %(stdin%): [%d.]+ [kMG]?B, [%d.]+ [kMG]?B/s", tty)
    -- a file on the C reader's path (its callback per chunk) after a slow
    -- standard input: the command has run a second, so the file's reading
    -- shows from its first chunk, with its share and an estimate
    local file = tmpfile(string.rep(line, (64 << 20) // #line))
    tty = both("(sleep 1.3) | " .. bin .. " report --fields wall_ns - " .. q(file) .. " >/dev/null")
    assert.matches("\rphaseprobe report: reading [^\r]*: [%d.]+ [kMG]?B of [%d.]+ [kMG]?B %(%d+%%%), "
      .. "[%d.,]+ [kM]? ?records, [%d.]+ [kMG]?B/s, about %d+ s left", tty)
    os.remove(big)
    os.remove(file)
    -- writing: trace --all, export (a reader that waits 1.5 s before it
    -- reads, so the step lasts over a second) and html (after a slow
    -- standard input); each with its rate and an estimate
    local log = os.tmpname()
    dofile(ROOT .. "/bench/gen_log.lua").write(log, 5000, { extra = true })
    local slow = " | (sleep 1.5; cat >/dev/null)"
    tty = both(bin .. " trace --all " .. q(log) .. slow)
    assert.matches("\rphaseprobe trace: writing the trace: [%d,.]+ [k ]*records of 5,000 %(%d+%%%), "
      .. "[%d.]+ [kM]? ?records/s, about %d+ s left", tty)
    for _, fmt in ipairs { "csv", "jsonl" } do
      tty = both(bin .. " export --" .. fmt .. " " .. q(log) .. slow)
      assert.matches("\rphaseprobe export: writing [%a ]+: [%d,.]+ [k ]*records of 5,000 %(%d+%%%), "
        .. "[%d.]+ [kM]? ?records/s, about %d+ s left", tty)
    end
    tty = both("(sleep 1.3; cat " .. q(log) .. ") | " .. bin .. " html - -o /dev/null")
    assert.matches("\rphaseprobe html: drawing the plots: [%w_]+, %d+ plots of %d+ %(%d+%%%), "
      .. "[%d.]+ plots/s, about %d+ s left", tty)
    -- the output itself never holds a progress line
    local out = os.tmpname()
    local rc = sh("script -qec " .. q("export PHASEPROBE_PROGRESS=; " .. bin .. " export --csv " .. q(log)
      .. " > " .. q(out) .. " 2>&1") .. " /dev/null")
    assert.are.equal(0, rc)
    local text = files.slurp(out)
    assert.is_nil(text:find("\r", 1, true))
    assert.matches("^seq,", text)
    os.remove(out)
    os.remove(log)
  end)

  it("shows progress through the analysis after the reading: report, fit, html", function()
    local bin = q(ROOT .. "/bin/phaseprobe")
    local log = os.tmpname()
    dofile(ROOT .. "/bench/gen_log.lua").write(log, 5000, { extra = true })
    -- (a slow standard input: the command has run a second when its
    -- analysis begins, so each step shows from its first item)
    local slow = "(sleep 1.3; cat " .. q(log) .. ") | " .. bin
    local function line(cmd, what, unit)
      return "\rphaseprobe " .. cmd .. ": " .. what .. ": [^\r]-%d+ " .. unit .. " of %d+ "
        .. "%(%d+%%%), [%d.]+ [kMG]? ?" .. unit .. "/s, about %d+ s left"
    end
    -- each command (its first word names it in the line) and the steps it
    -- shows: { what [, unit (default: fields)] }
    for _, case in ipairs {
      { "report - >/dev/null", { "summarising the phases" }, { "fitting the phases" },
        { "pricing the starvation", "summaries" } },
      { "report --group shape - >/dev/null", { "shape=large: fitting the phases" } },
      { "report --fields wall_ns,ptx_ns,nodes,fixpoint - >/dev/null", { "summarising the fields" } },
      { "fit - >/dev/null", { "fitting the phases" } },
      { "fit --group shape - >/dev/null", { "shape=small: fitting the phases" } },
      { "html - -o /dev/null", { "summarising the groups" }, { "fitting the phases" } },
      { "plot --phase ptx - -o /dev/null", { "fitting the phases" } },
      { "compare --by shape small large - >/dev/null", { "comparing shape=small with shape=large" } },
    } do
      local cmd = case[1]:match("^%S+")
      local tty = both(slow .. " " .. case[1])
      for i = 2, #case do
        assert.matches(line(cmd, case[i][1], case[i][2] or "fields"), tty)
      end
    end
    os.remove(log)
  end)

  it("clears a progress line before the message of an error that ends the command", function()
    local cli_progress = require "phaseprobe.cli.progress"
    local out, err = capture(), capture()
    local cmd = { run = function(_, ctx)
      local p = ctx.progress("working", { total = 10, unit = "items" })
      p.started = p.started - 5 -- as if the command had run five seconds
      p:update(3, nil, "item 4")
      ctx.fail("it broke")
    end }
    local enabled = cli_progress.enabled
    cli_progress.enabled = function() return true end
    local rc = cli.run(cmd, "stub", {}, out, err)
    cli_progress.enabled = enabled
    assert.are.equal(1, rc)
    assert.matches("^\rphaseprobe stub: working: item 4, 3 items of 10", err.text())
    assert.matches("\r\27%[Kphaseprobe stub: it broke\n$", err.text())
  end)

  it("keeps a progress line within the terminal's width, the item's label going first", function()
    local progress = require "phaseprobe.cli.progress"
    local function drawn(columns, label)
      local getenv = os.getenv
      os.getenv = function(k) if k == "COLUMNS" then return columns end return getenv(k) end
      local err = capture()
      local p = progress.new({ err = err, name = "phaseprobe report", t0 = 0 },
        "fitting the phases", { total = 11, unit = "fields" })
      p.on, p.started = true, p.started - 5
      p:update(4, nil, label)
      os.getenv = getenv
      return (err.text():gsub("^\r", ""):gsub("\27%[K$", ""))
    end
    local long = "sub_a_rather_long_nested_region_name_that_goes_on_ns"
    local full = drawn(nil, "ptx_ns")
    assert.matches("^phaseprobe report: fitting the phases: ptx_ns, 4 fields of 11 %(36%%%), ", full)
    assert.is_true(#full <= 100, full)
    local cut = drawn(nil, long)
    assert.is_true(#cut <= 100, cut)
    assert.matches("^phaseprobe report: fitting the phases: 4 fields of 11 %(36%%%), [%d.]+ [kM]? ?fields/s", cut)
    local narrow = drawn("60", "ptx_ns")
    assert.are.equal(59, #narrow)
    assert.matches("^phaseprobe report: fitting the phases: 4 fields of 11", narrow)
    -- a path loses its front first, the figures stay
    local err = capture()
    local getenv = os.getenv
    os.getenv = function(k) if k == "COLUMNS" then return "120" end return getenv(k) end
    local p = progress.new({ err = err, name = "phaseprobe report", t0 = 0 },
      "reading /data/runs/2026-12-01/a-long-directory-name/run-with-the-base-knobs.log",
      { total = 4e8, unit = "B", second = "records" })
    p.on, p.started = true, p.started - 5
    p:update(1e8, 250000)
    os.getenv = getenv
    local line = err.text():gsub("^\r", ""):gsub("\27%[K$", "")
    assert.are.equal(119, utf8.len(line), line)
    assert.matches("^phaseprobe report: reading …[^:]*the%-base%-knobs%.log: 100 MB of 400 MB "
      .. "%(25%%%), 250 k records, [%d.]+ [kMG]?B/s, about [%d]+ [%a ]+ left$", line)
  end)

  it("pp.isatty tells a terminal from a file or pipe", function()
    assert.is_false(pp.isatty(io.tmpfile()))
    local rc, out = sh("script -qec " .. q("lua5.4 -e 'package.cpath=\"" .. ROOT
      .. "/?.so;\"..package.cpath; io.write(tostring(require(\"phaseprobe\").isatty(1)))'")
      .. " /dev/null")
    assert.are.equal(0, rc)
    assert.matches("true", out)
    assert.has_error(function() pp.isatty(-1) end)
    local f = io.tmpfile()
    f:close()
    assert.has_error(function() pp.isatty(f) end, "bad argument #1 to 'isatty' (closed file)")
  end)
end)
