-- What the REPL prints: every kind of result as a readable table or line
-- (never "table: 0x..."), one value per call, no sums of ids or
-- timestamps; argument errors that name the argument and list the choices.
local ROOT = os.getenv("PWD") or "."

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs lines in `lua5.4 -i -l pp=phaseprobe` from the checkout, as a user
-- would: the REPL's output, one chunk per input line.
local function repl(lines)
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(table.concat(lines, "\n"), "\n")
  f:close()
  local p = io.popen("cd " .. q(ROOT) .. " && LUA_PATH='./lua/?.lua;./lua/?/init.lua;;' "
    .. "LUA_CPATH='./?.so;;' lua5.4 -i -l pp=phaseprobe < " .. q(path) .. " 2>&1")
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
