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
      local err = command.usage_error(table.unpack(c[1]))
      assert.matches("^phaseprobe " .. c[1][1] .. ": " .. c[2] .. "\nusage: phaseprobe " .. c[1][1], err)
    end
  end)

  it("name a missing --by field with status 2", function()
    local log = clean_log()
    local rc, _, err = run("html", "--by", "no_such_field", log)
    os.remove(log)
    assert.are.equal(2, rc)
    assert.matches("%-%-by no_such_field: no field 'no_such_field' in the records %(quantities: nodes", err)
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
      .. "%.%.%.%): refused %(%-%-strict%)\n$", (err:gsub("\n    ", " ")))
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

  it("say once who failed and which path, when the output cannot be written", function()
    local log = clean_log()
    for _, c in ipairs {
      { "trace", log, "-o", "/nonexistent/x.json" },
      { "export", "--csv", log, "-o", "/nonexistent/x.csv" },
      { "export", "--jsonl", log, "-o", "/nonexistent/x.jsonl" },
      { "html", log, "-o", "/nonexistent/x.html" },
      { "plot", "--bars", log, "-o", "/nonexistent/x.svg" },
    } do
      local rc, out, err = run(table.unpack(c))
      assert.are.equal(1, rc, err)
      assert.are.equal("", out)
      local path = c[#c]:gsub("%p", "%%%0")
      assert.matches("^phaseprobe " .. c[1] .. ": cannot write '" .. path .. "': No such file or "
        .. "directory\n$", err)
      assert.are.equal(1, select(2, err:gsub(path, "")), err) -- the path once
    end
    for _, c in ipairs {
      { "trace", log, "-o", "/dev/full" }, { "export", "--csv", log, "-o", "/dev/full" },
      { "html", log, "-o", "/dev/full" },
    } do
      local rc, _, err = run(table.unpack(c))
      assert.are.equal(1, rc, err)
      assert.matches("^phaseprobe " .. c[1] .. ": writing '/dev/full' failed: No space left on device\n$", err)
    end
    os.remove(log)
  end)

  it("refuse an output path holding a NUL byte (C would cut it)", function()
    local export = require "phaseprobe.output.export"
    local set = require("phaseprobe.records").from_string("r seq=1 n=2\n")
    local cut = os.tmpname()
    os.remove(cut)
    for _, name in ipairs { "csv", "jsonl", "trace" } do
      local ok, err = pcall(export[name], set, cut .. "\0.x")
      assert.is_false(ok, name)
      assert.matches("export%." .. name .. ": the output path .* holds a NUL byte", err, name)
      assert.is_false(exists(cut), name)
    end
  end)

  it("refuse a path holding a NUL byte wherever a path comes from Lua, naming it", function()
    local export = require "phaseprobe.output.export"
    local pfiles = require "phaseprobe.output.files"
    local html = require "phaseprobe.output.html"
    local records = require "phaseprobe.records"
    local set = records.from_string("r seq=1 wall_ns=20 a_ns=5\n")
    -- a file at the path cut at the NUL: reading it would be reading the wrong file
    local cut = os.tmpname()
    files.spit(cut, "seq,wall_ns\n1,5\n")
    for _, c in ipairs {
      { "export.read_csv: the input path", export.read_csv, cut .. "\0.csv" },
      { "export.read_jsonl: the input path", export.read_jsonl, cut .. "\0.jsonl" },
      { "test: the input path", pfiles.slurp, cut .. "\0.x", "test" },
      { "phaseprobe.records.read: the input path", records.read, cut .. "\0.csv" },
      { "files.format_of: the input path", pfiles.format_of, cut .. "\0" },
      { "demo.load_log: the log path", require("phaseprobe.dispatch.demo").load_log, cut .. "\0" },
    } do
      local ok, err = pcall(c[2], select(3, table.unpack(c)))
      assert.is_false(ok, c[1])
      assert.matches(c[1] .. " \"", err, 1, true)
      assert.matches("holds a NUL byte (a file name cannot)", err, 1, true)
    end
    -- writing: nothing is made at the cut path
    local out = os.tmpname()
    os.remove(out)
    local ok, err = pcall(html.write, set, out .. "\0.html")
    assert.is_false(ok)
    assert.matches("html.write: the output path \"", err, 1, true)
    assert.is_false(exists(out))
    -- and what is no path at all
    ok, err = pcall(pfiles.slurp, 42, "test")
    assert.is_false(ok)
    assert.matches("test: expected an input path (a string), got number", err, 1, true)
    ok, err = pcall(html.write, set, "")
    assert.is_false(ok)
    assert.matches("html.write: expected an output path (a string), or \"-\" for stdout, got an "
      .. "empty string", err, 1, true)
    -- a path that cannot be written: nil and the reason, once
    local r, msg = html.write(set, "/nonexistent-dir/x.html")
    assert.is_nil(r)
    assert.are.equal("html.write: cannot write '/nonexistent-dir/x.html': No such file or directory", msg)
    os.remove(cut)
  end)

  it("read CSV and JSON lines as the command does: comment lines ('#' first) skipped", function()
    local export = require "phaseprobe.output.export"
    local csv = os.tmpname() .. ".csv"
    files.spit(csv, "# written by a tool\n  # another comment\nseq,wall_ns\n1,5\n2,7\n")
    local set = assert(export.read_csv(csv))
    assert.are.equal(2, set:count())
    assert.are.equal(7, set[2].wall_ns)
    local rc, out, err = run("report", "--fields", "wall_ns", csv)
    assert.are.equal(0, rc, err)
    assert.matches("5 lines: 2 records, 0 damaged, 3 other", out, 1, true)
    -- after the header, a '#' line is a row like any other
    files.spit(csv, "seq,wall_ns\n# 1,5\n")
    set = assert(export.read_csv(csv))
    assert.are.equal(1, set:count())
    assert.are.equal("# 1", set[1].seq)
    os.remove(csv)
    local jsonl = os.tmpname() .. ".jsonl"
    files.spit(jsonl, '# written by a tool\n{"seq":1,"wall_ns":5}\n# between\n{"seq":2,"wall_ns":7}\n')
    set = assert(export.read_jsonl(jsonl))
    assert.are.equal(2, set:count())
    assert.are.equal(4, set:columns():get(set:row(2), "@line"))
    rc, out, err = run("report", "--fields", "wall_ns", jsonl)
    assert.are.equal(0, rc, err)
    assert.are.equal("", err)
    assert.matches("4 lines: 2 records, 0 damaged, 2 other", out, 1, true)
    os.remove(jsonl)
  end)

  it("export every record's own text, a chunk at a time: layouts, views, gaps, chunk edges", function()
    local export = require "phaseprobe.output.export"
    local json = require "phaseprobe.output.json"
    local records = require "phaseprobe.records"
    -- three layouts (one the other's fields in another order), values of
    -- every kind, fields some records lack, over several chunks
    local lines = {}
    for i = 1, 2 * json.CHUNK + 77 do
      local k = i % 3
      if k == 0 then
        lines[i] = ("a seq=%d n=%d f=%s s=x%d"):format(i, i * 7, i % 5 == 0 and "1.50" or "2e3", i)
      elseif k == 1 then
        lines[i] = ("b s=y%d seq=%d n=18446744073709551%03d"):format(i, i, i % 616)
      else
        lines[i] = ("a seq=%d n=-%d g=9007199254740993"):format(i, i)
      end
    end
    local set = records.from_string(table.concat(lines, "\n") .. "\n")
    -- the expectation, record by record, from each record's own text
    local function want_jsonl(s, view)
      local out = {}
      for i, r in s:each() do
        local parts = {}
        for _, f in ipairs(view or r._fields) do
          local v = r[f]
          if v ~= nil then
            parts[#parts + 1] = ("%q:%s"):format(f, type(v) == "string" and ("%q"):format(v)
              or r:_text(f))
          end
        end
        out[i] = "{" .. table.concat(parts, ",") .. "}\n"
      end
      return table.concat(out)
    end
    local function want_csv(s)
      local fields = s:fields()
      local out = { table.concat(fields, ",") .. "\n" }
      for _, r in s:each() do
        local cells = {}
        for k, f in ipairs(fields) do
          local v = r[f]
          cells[k] = v == nil and "" or type(v) == "string" and ('"' .. v .. '"') or r:_text(f)
        end
        out[#out + 1] = table.concat(cells, ",") .. "\n"
      end
      return table.concat(out)
    end
    local tmp = os.tmpname()
    local function got(fmt, s)
      assert(export[fmt](s, tmp))
      return files.slurp(tmp)
    end
    for _, s in ipairs { set, set:where("seq>1000"), set:where { s = false } } do
      assert.are.equal(want_jsonl(s), got("jsonl", s))
      assert.are.equal(want_csv(s), got("csv", s))
    end
    local view = set:select("n", "seq", "g")
    assert.are.equal(want_jsonl(view, { "n", "seq", "g" }), got("jsonl", view))
    assert.are.equal(want_csv(view), got("csv", view))
    -- progress: once per chunk, up to the count
    local calls = {}
    assert(export.csv(set, tmp, nil, { progress = function(done, total) calls[#calls + 1] = done .. "/" .. total end }))
    assert.are.same({ json.CHUNK .. "/" .. #set, 2 * json.CHUNK .. "/" .. #set, #set .. "/" .. #set }, calls)
    -- a value no format holds (only a set made with text = "any" has one):
    -- refused before anything is written, naming record and field
    os.remove(tmp)
    local bad = records.from_list({ { seq = 1, x = 1.5 }, { seq = 2, x = 0 / 0 } }, { text = "any" })
    local ok, err = pcall(export.jsonl, bad, tmp)
    assert.is_false(ok)
    assert.matches("export.jsonl: record 2, field 'x': .*nan cannot be written", err)
    assert.is_false(exists(tmp))
  end)

  it("export in memory that does not grow with the records #nosan #novalgrind", function()
    -- peak memory of export against report of the same log (the parsed
    -- records): the writers hold one chunk of records at a time
    local log = os.tmpname()
    dofile("bench/gen_log.lua").write(log, 60000, { extra = true })
    local function peak(args)
      local p = io.popen("/usr/bin/time -f '%M' ./bin/phaseprobe " .. args .. " 2>&1 >/dev/null")
      local text = p:read("a")
      p:close()
      return assert(tonumber(text:match("(%d+)%s*$")), text)
    end
    local base = peak("report '" .. log .. "'")
    for _, fmt in ipairs { "csv", "jsonl" } do
      local kb = peak("export --" .. fmt .. " '" .. log .. "' -o /dev/null")
      assert.is_true(kb < base + 16 * 1024, ("%s: %d KB against report's %d KB"):format(fmt, kb, base))
    end
    os.remove(log)
  end)
end)
