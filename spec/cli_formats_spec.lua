-- Every command that reads records, on each input format (a log, CSV, JSON
-- lines; by extension and, on standard input, by content), with --where, a
-- damaged line (named on stderr, left out, exit 0), and output within 100
-- columns.
local tc = require "helpers.trace_check"

local files = require "helpers.files"
local command = require "helpers.command"
local run = command.run

local DEMO = "examples/data/demo-h200.log"
local dir = files.tmpdir()
local function tmp(name) return dir:file(name) end
local spit, slurp = files.spit, files.read

-- The first 301 lines of the demo log (its header and 300 records), one
-- input per format, each with its 40th line cut in half.
local DAMAGED = 40
local inputs = {}
local base_records = 0

setup(function()
  local lines = {}
  for l in io.lines(DEMO) do
    lines[#lines + 1] = l
    if #lines == 301 then break end
  end
  spit(tmp("clean.log"), table.concat(lines, "\n") .. "\n")
  for i = 2, #lines do
    if i ~= DAMAGED and lines[i]:find(" knob=base ", 1, true) then base_records = base_records + 1 end
  end
  assert(run("export", "--csv", tmp("clean.log"), "-o", tmp("clean.csv")) == 0)
  assert(run("export", "--jsonl", tmp("clean.log"), "-o", tmp("clean.jsonl")) == 0)
  for _, fmt in ipairs { "log", "csv", "jsonl" } do
    local rows = {}
    for l in io.lines(tmp("clean." .. fmt)) do rows[#rows + 1] = l end
    -- the same record in every format: the log's line 40 is its 39th
    -- record; CSV has a header line, JSON lines none
    local at = fmt == "log" and DAMAGED or fmt == "csv" and DAMAGED or DAMAGED - 1
    rows[at] = rows[at]:sub(1, #rows[at] // 2)
    spit(tmp("in." .. fmt), table.concat(rows, "\n") .. "\n")
    inputs[fmt] = { path = tmp("in." .. fmt), line = at }
  end
end)

teardown(function() dir:remove() end)

local widest = command.widest

local COMMANDS = {
  { "report", function(f) return { "report", "--where", "knob=base", f } end },
  { "fit", function(f) return { "fit", "--where", "knob=base", f } end },
  { "compare", function(f) return { "compare", "--by", "knob", "base", "memo_digest", "--where",
    "shape=small", f } end },
  { "whatif", function(f) return { "whatif", "--remove", "ptx_digest", "--variant", "knob=memo_digest",
    "--where", "shape!=mid", f } end },
  { "trace", function(f, o) return { "trace", "--where", "knob=base", f, "-o", o } end, "json" },
  { "html", function(f, o) return { "html", "--where", "knob=base", f, "-o", o } end, "html" },
  { "plot", function(f, o) return { "plot", "--phase", "ptx", "--where", "knob=base", f, "-o", o } end, "svg" },
  { "export", function(f, o) return { "export", "--jsonl", "--where", "knob=base", f, "-o", o } end, "jsonl" },
}

describe("every command on every input format", function()
  for _, fmt in ipairs { "log", "csv", "jsonl" } do
    for _, c in ipairs(COMMANDS) do
      it(c[1] .. " on " .. fmt, function()
        local input = inputs[fmt]
        local out_path = c[3] and tmp(c[1] .. "-" .. fmt .. "." .. c[3])
        local rc, out, err = run(table.unpack(c[2](input.path, out_path)))
        assert.are.equal(0, rc, err)
        -- the damaged line: named with its line number (and, in a log, its
        -- column: a CSV cell or a JSON line is named by the message itself),
        -- counted, left out
        assert.matches(input.path:gsub("%p", "%%%0") .. ":" .. input.line
          .. (fmt == "log" and ":%d+: " or ": "), err)
        assert.matches(": 1 damaged record line %(line " .. input.line .. "%): left out", err)
        local w, line = widest(out .. err)
        assert.is_true(w <= 100, c[1] .. " " .. fmt .. ": " .. w .. " columns: " .. tostring(line))
        if out_path then
          local text = assert(slurp(out_path), "no output written")
          assert.is_true(#text > 0)
          if c[1] == "trace" then
            local rep = tc.check(text)
            assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
            assert.are.equal(base_records, #rep.dispatches)
          elseif c[1] == "export" then
            assert.are.equal(base_records, select(2, text:gsub("\n", "")))
            assert.is_nil(text:find('"knob":"memo', 1, true))
          end
        else
          assert.is_true(#out > 0)
        end
        -- under --strict the same input is refused before anything is written
        if out_path then os.remove(out_path) end
        local argv = c[2](input.path, out_path)
        table.insert(argv, 2, "--strict")
        local rc2, out2 = run(table.unpack(argv))
        assert.are.equal(1, rc2)
        assert.are.equal("", out2)
        if out_path then assert.is_nil(slurp(out_path)) end
      end)
    end
  end

  it("reads each format on standard input by its content", function()
    for _, fmt in ipairs { "log", "csv", "jsonl" } do
      local p = io.popen("LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' ./bin/phaseprobe report "
        .. "--where knob=base - < '" .. inputs[fmt].path .. "' 2>&1; echo rc=$?")
      local text = p:read("a")
      p:close()
      assert.matches("rc=0\n$", text, fmt)
      assert.matches("records: " .. base_records .. " %[", text, fmt)
      assert.matches("%(stdin%):" .. inputs[fmt].line .. (fmt == "log" and ":%d+: " or ": "), text, fmt)
    end
  end)

  -- ---- which format: by extension, else by content ------------------------
  local function demo_lines(n)
    local lines = {}
    for l in io.lines(DEMO) do
      lines[#lines + 1] = l
      if #lines == n then break end
    end
    return lines
  end

  local function stdin_run(path, ...)
    local args = table.concat({ ... }, " ")
    local p = io.popen("LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' ./bin/phaseprobe " .. args
      .. " - < '" .. path .. "' 2>&1; echo rc=$?")
    local text = p:read("a")
    p:close()
    return text
  end

  it("reads a log whose first line is a comment with a comma, from a file or standard input", function()
    local lines = demo_lines(301)
    lines[1] = "# host gpu01, run 2"
    local text = table.concat(lines, "\n") .. "\n"
    for _, name in ipairs { "comment.log", "comment.out", "comment" } do
      spit(tmp(name), text)
      local rc, out, err = run("report", tmp(name))
      assert.are.equal(0, rc, name .. ": " .. err)
      assert.matches("records: 300 %[", out, name)
    end
    local piped = stdin_run(tmp("comment.out"), "report")
    assert.matches("rc=0\n$", piped)
    assert.matches("records: 300 %[", piped)
    -- a header line with commas and no '=' followed by record lines is a log too
    lines[1] = "run,host,date"
    spit(tmp("header.out"), table.concat(lines, "\n") .. "\n")
    local rc, out, err = run("report", tmp("header.out"))
    assert.are.equal(0, rc, err)
    assert.matches("records: 300 %[", out)
  end)

  it("reads CSV and JSON lines with another extension, or none, by their content", function()
    local csv, jsonl = slurp(tmp("clean.csv")), slurp(tmp("clean.jsonl"))
    for _, c in ipairs {
      { "export.txt", csv }, { "export.out", csv }, { "export", csv },
      { "export-j.txt", jsonl }, { "export-j.out", jsonl },
      -- comments before the header: skipped, as in a log
      { "commented.out", "# exported from run 2, gpu01\n#\n" .. csv },
      { "commented.csv", "# exported from run 2, gpu01\n" .. csv },
    } do
      spit(tmp(c[1]), c[2])
      local rc, out, err = run("report", tmp(c[1]))
      assert.are.equal(0, rc, c[1] .. ": " .. err)
      assert.matches("records: 300 %[", out, c[1])
      assert.are.equal("", err, c[1])
      local piped = stdin_run(tmp(c[1]), "report")
      assert.matches("records: 300 %[", piped, c[1])
    end
  end)

  it("says when a file that holds no record lines looks like CSV or JSON lines", function()
    local csv, jsonl = slurp(tmp("clean.csv")), slurp(tmp("clean.jsonl"))
    spit(tmp("export-csv.log"), csv)
    spit(tmp("export-jsonl.log"), jsonl)
    spit(tmp("header-only.txt"), csv:match("^[^\n]*\n"))
    for _, c in ipairs {
      { "export-csv.log", "looks like CSV" }, { "export-jsonl.log", "looks like JSON lines" },
      { "header-only.txt", "looks like CSV" },
    } do
      local rc, _, err = run("report", tmp(c[1]))
      assert.are.equal(1, rc, c[1])
      -- (a message past 100 columns goes on under its first words)
      assert.matches("no record lines %(%d+ lines?: 0 damaged, %d+ other%); [^\n]*" .. c[2],
        (err:gsub("\n    ", " ")), c[1])
    end
  end)

  it("names a damaged CSV cell by row and cell, a damaged JSON line by its line", function()
    spit(tmp("bad.csv"), "seq,wall_ns,x\n1,abc,q\n2,5\n3,7,\"a b\"\n4,8,z\n")
    local rc, _, err = run("report", tmp("bad.csv"))
    assert.are.equal(0, rc, err)
    local f = tmp("bad.csv"):gsub("%p", "%%%0")
    assert.matches(f .. ":2: cell 2 %(wall_ns%): bad number 'abc'", err)
    assert.matches(f .. ":3: 2 cells, the header has 3", err)
    assert.matches(f .. ":4: cell 3 %(x%): \"a b\" cannot be a record value", err)
    spit(tmp("bad.jsonl"), '{"seq":1,"wall_ns":5}\n{"seq":2,"wall_ns":"abc"}\n')
    local rc2, _, err2 = run("report", tmp("bad.jsonl"))
    assert.are.equal(0, rc2, err2)
    assert.matches(tmp("bad.jsonl"):gsub("%p", "%%%0") .. ":2: field 'wall_ns': bad number 'abc'", err2)
  end)
end)
