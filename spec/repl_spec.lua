-- What the REPL prints: every kind of result as a readable table or line
-- (never "table: 0x..."), one value per call, no sums of ids or
-- timestamps; argument errors that name the argument and list the choices.
local ROOT = os.getenv("PWD") or "."

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- No path from the caller's environment: tools/repl alone finds the
-- checkout's module and Lua side.
local NO_PATHS = "env -u LUA_PATH -u LUA_PATH_5_4 -u LUA_CPATH -u LUA_CPATH_5_4 "

-- Runs lines in tools/repl (`lua5.4 -i -l pp=phaseprobe` with the
-- checkout's paths) from the checkout, as a user would: the REPL's output,
-- one chunk per input line.
local function repl(lines, dir, args)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local p = io.popen("cd " .. q(dir or ROOT) .. " && " .. NO_PATHS .. q(ROOT .. "/tools/repl")
    .. " " .. (args or "") .. " < " .. q(path) .. " 2>&1")
  local out = p:read("a")
  p:close()
  os.remove(path)
  -- split at the prompts: the text printed after each input line
  local chunks = {}
  for part in (out .. "> "):gmatch("> ([^\n]*\n.-)%f[>]") do chunks[#chunks + 1] = part end
  return out, chunks
end

describe("the REPL", function()
  it("prints each kind of result readably", function()
    local kinds = {
      { 's = pp.records.read("examples/data/demo-h200.log")', nil },
      { "s", "^phaseprobe.records: 1,350 records" },
      { 's:summary("wall_ns")', "phaseprobe.summary of wall_ns.*wall_ns +1,350 +%d+ us +%d+ us" },
      { 's:fit("nodes", "ptx_ns")', "phaseprobe.fit of ptx_ns against nodes.*least squares.*Theil%-Sen" },
      { "s:fields()", "phaseprobe.fields %(%d+%): seq, nodes" },
      { 's:summaries({"wall_ns", "nodes"})', "phaseprobe.summaries" },
      { "pp.stats()", "phaseprobe.stats\n.*  dropped +%d+" },
      { "pp.clock()", "phaseprobe.clock\n.*  name +%a+" },
      { "pp.records.from_store()", "^phaseprobe.records: 0 records" },
      { 'require("phaseprobe.analysis.analyze").scaling(s)', "phaseprobe.scaling\nquantities:" },
      { 'require("phaseprobe.analysis.fit").verdict(s, "ptx_ns", {"nodes"})', "phaseprobe.verdict" },
      { 'require("phaseprobe.analysis.compare").by(s, "knob", "base", "memo_digest")',
        "phaseprobe.comparison\nknob=base: 450 dispatches" },
      { 'require("phaseprobe.analysis.whatif").project(s, {remove={"ptx_digest"}})', "phaseprobe.whatif" },
      { 'require("phaseprobe.analysis.analyze").starvation(s)', "phaseprobe.starvation" },
      { 'require("phaseprobe.analysis.analyze").phases(s)', "phaseprobe.phases" },
      { 's:group("shape")', "phaseprobe.groups by shape: 3 groups" },
      { 'pp.ptx.scan(".version 8.0\\n.target sm_90\\n.address_size 64\\n")',
        "phaseprobe.ptx.scan\n  address_size +64" },
      { 'require("phaseprobe.analysis.fit").line({1,2,3,4}, {3,5,7,9})',
        "least squares +1 %+ 2 x x" },
    }
    local lines = {}
    for i, k in ipairs(kinds) do lines[i] = k[1] end
    local out, chunks = repl(lines)
    assert.is_nil(out:find("table: 0x", 1, true), out)
    for i, k in ipairs(kinds) do
      local text = chunks[i] or ""
      if k[2] then assert.matches(k[2], text:gsub("^[^\n]*\n", ""), nil, k[1] .. ":\n" .. text) end
    end
    -- from_store prints one value, not the set and a report
    local store = chunks[9]:gsub("^[^\n]*\n", "")
    assert.are.equal(1, select(2, store:gsub("phaseprobe%.", "")), store)
    -- summaries of the set leave out the sums and means of ids and timestamps
    local set = chunks[2]
    for _, f in ipairs { "seq", "tid", "start_ns" } do
      local row = set:match("\n(" .. f .. " [^\n]*)")
      assert.truthy(row, f)
      assert.matches("%-$", row, f)
    end
    -- and fit the width of the tables
    for l in out:gmatch("[^\n]+") do
      assert.is_true((utf8.len(l) or #l) <= 100, l)
    end
  end)

  it("prints a read's report, group summaries, fits, values and lists readably", function()
    local csv = os.tmpname() .. ".csv"
    local jsonl = os.tmpname() .. ".jsonl"
    local cli = require "phaseprobe.cli"
    local sink = io.tmpfile()
    assert.are.equal(0, cli.main({ "export", "--csv", "examples/data/demo-h200.log", "-o", csv }, sink, sink))
    assert.are.equal(0, cli.main({ "export", "--jsonl", "examples/data/demo-h200.log", "-o", jsonl }, sink, sink))
    local kinds = {
      -- a read's two results: the set, then its report on a line of its own
      { 'pp.records.read("examples/data/demo-h200.log")', "^phaseprobe.records: 1,350 records.*\t\n"
        .. "phaseprobe.parse_report: 1352 lines: 1350 records, 0 damaged, 2 other\n$" },
      { 'pp.parse.file("examples/data/demo-h200.log")', "^phaseprobe.columns %(1350 records, %d+ fields%)\t\n"
        .. "phaseprobe.parse_report: 1352 lines: 1350 records, 0 damaged, 2 other\n$" },
      { 'pp.parse.file("spec/fixtures/logs/mixed.log")', "phaseprobe.parse_report: 19 lines: 4 records, "
        .. "8 damaged, 7 other\n  spec/fixtures/logs/mixed.log:5:%d+: missing field ptx_cache_misses" },
      { 's = pp.records.read("examples/data/demo-h200.log")', "^$" },
      { 's:group("shape"):summary("wall_ns")', "^phaseprobe.summaries of wall_ns by shape: 3 groups\n"
        .. "shape +count +min.*\nsmall +360 " },
      { 's:fits({"nodes", "ptx_bytes"}, {"ptx_ns"})', "^phaseprobe.fits: 1 field against 2 quantities\n1,350 points each\ny +x +least squares"
        .. ".*\nptx_ns +nodes +[%d.]+ [mu]?s %+ [%d.]+ ns x nodes" },
      { 's:fits({"nodes"}, {"ptx_ns"}).ptx_ns.nodes', "^phaseprobe.fit of ptx_ns against nodes" },
      { 's:values("nodes")', "^phaseprobe.values of nodes %(1,350%): 48, 48, .*%.%.%. %(1,330 more%)" },
      { 's:values("wall_ns", "text")', '^phaseprobe.values of wall_ns %(1,350%): "%d+", ' },
      { "s:prefixes()", "^phaseprobe.prefixes %(1%): vyre%-cuda%-dispatch%-phase %(1,350%)" },
      { "s:layout()", "^phaseprobe.layout %(phases found by the reference rule%)\n  phases +prepare_ns, "
        .. ".*\n  nested +sub_ptx_digest_ns %(in ptx_ns%)" },
      { 's:group("shape")[1]', "^phaseprobe.group shape=small: 360 records" },
      { 's:group("knob"):get("base")', "^phaseprobe.group knob=base: 450 records" },
      { "s:head(3):records()", "^phaseprobe.record list: 3 records\n  vyre%-cuda%-dispatch%-phase seq=1 " },
      { 's:lincomb({{"device_window_ns", 1}, {"kernel_ns", -1}}, 0)',
        "^phaseprobe.summary of device_window_ns %- kernel_ns %(at least 0 ns%)" },
      -- the command line's conditions; unknown fields named, with the fields
      { 's:where("knob=base"):count()', "^450\n" },
      { 's:where("shape!=mid"):count()', "^900\n" },
      { 's:where("nodes>=2500"):count()', "^%d+\n" },
      { 's:where{nosuch = "x"}', "no field 'nosuch' in this record set %(fields: seq, nodes," },
      { 's:where("nosuch=base")', "no field 'nosuch' in this record set %(fields: seq, nodes," },
      -- (the text after a '>' goes to the next chunk: the prompt is '> ')
      { 's:where("knob")', "'knob' is no condition: give F=V, F!=V, F<N, F<=N, F" },
      -- CSV and JSON lines read as such
      { "pp.records.read(" .. ("%q"):format(csv) .. ")", "^phaseprobe.records: 1,350 records.*"
        .. "phaseprobe.parse_report: [^\n]*%(CSV%): 1,350 rows: 1,350 records\n$" },
      { "pp.records.read(" .. ("%q"):format(jsonl) .. "):count()", "^1350\n" },
    }
    local lines = {}
    for i, k in ipairs(kinds) do lines[i] = k[1] end
    local out, chunks = repl(lines)
    os.remove(csv)
    os.remove(jsonl)
    assert.is_nil(out:find("table: 0x", 1, true), out)
    for i, k in ipairs(kinds) do
      local text = (chunks[i] or ""):gsub("^[^\n]*\n", "")
      assert.matches(k[2], text, nil, k[1] .. ":\n" .. text)
    end
    assert.are.equal(1, select(2, chunks[1]:gsub("phaseprobe%.parse_report", "")))
    -- the tables fit 100 columns (an error, its traceback and a damaged
    -- line's message, file:line:column: what, may not)
    for l in out:gmatch("[^\n]+") do
      if not l:find("phaseprobe.records:", 1, true) and not l:find("^  [^ ]+:%d+:%d+: ")
        and not l:find("^\t") then
        assert.is_true((utf8.len(l) or #l) <= 100, l)
      end
    end
  end)

  it("runs from any directory: tools/repl finds the module and its Lua side", function()
    local out, chunks = repl({ 'print(type(pp.records), type(require("phaseprobe.analysis.analyze")),'
      .. ' type(require("phaseprobe.cli")), package.path:find(' .. ("%q"):format(ROOT .. "/lua/?.lua;")
      .. ', 1, true) == 1)' }, "/tmp")
    assert.truthy((chunks[1] or ""):find("table\ttable\ttable\ttrue\n", 1, true), out)
    -- arguments go to the interpreter after the module is loaded
    out = repl({}, "/tmp", "-e " .. q("print(pp.version)"))
    assert.truthy(out:find("\n" .. require("phaseprobe").version .. "\n", 1, true), out)
  end)

  it("names the argument of a bad call and lists the valid choices", function()
    local pp = require "phaseprobe"
    pp.enable()
    pp.begin()
    local function err(f, ...)
      local ok, e = pcall(f, ...)
      assert.is_false(ok)
      return e
    end
    assert.matches("bad argument #2 to '[%w.]*cache' %(invalid option 'maybe'; valid: hit, miss, disk_hit%)",
      err(pp.cache, "ptx", "maybe"))
    assert.matches("bad argument #2 to '[%w.]*kernel_ns' %(invalid option 'magic'; valid: none, event, cupti, user%)",
      err(pp.kernel_ns, 5, "magic"))
    assert.matches("bad argument #1 to '[%w.]*phase' %(string %(a phase name%) expected, got number%)",
      err(pp.phase, 42))
    assert.matches("unknown cache 'module' %(schema 'vyre%-cuda%-dispatch%-phase' has: ptx%)",
      err(pp.cache, "module", "hit"))
    assert.matches("invalid option 'middle'; valid: first, last", err(pp.store.keep, "middle"))
    assert.matches("invalid option 'sundial'; valid: tsc, monotonic, monotonic_raw",
      err(pp.select_clock, "sundial"))
    pp.finish()
    pp.disable()
  end)
end)
