-- The module lives in the process it measures: misuse, hostile arguments
-- and oversized inputs must end in an error or a clean refusal, never in a
-- crash, a read of freed memory or unbounded growth. Records and the
-- printable result tables (printed whole, printing any value, read-only
-- field lists, metatables not kept): spec/safety_records_spec.lua.
--
-- Cases that crashed (or corrupted memory) run in their own interpreter, so
-- a crash fails the case instead of the whole run; under `make asan` that
-- interpreter is sanitized too (helpers/isolated.lua).
local pp = require "phaseprobe"
local shell = require "helpers.shell"
local files = require "helpers.files"

local ROOT = os.getenv("PWD") or "."

local q = require("helpers.shell").q

-- Runs a Lua chunk in a fresh interpreter (with a time limit) and checks
-- that it exited cleanly; PRELUDE is what the chunk starts with.
local isolated = require "helpers.isolated"
local PRELUDE, sub, clean = isolated.PRELUDE, isolated.run, isolated.clean

-- Runs chunk as sub does, checked clean, against the fake driver, with ctx
-- (a context of it) defined; nil, and the case pending, where the module
-- was built without the CUDA headers or the fake is missing.
local sub_cuda = require "helpers.cuda_sub"
local function with_fake(chunk)
  if not sub_cuda.fake_ready() then
    pending("needs the CUDA headers and build/libfakecuda.so")
    return nil
  end
  return clean(sub("local ctx = assert(pp.cuda.context(0))\n" .. chunk,
    { env = { PHASEPROBE_LIBCUDA = sub_cuda.fake } }))
end

describe("lengths from Lua never size an allocation through __len (#12 defect 2)", function()
  it("numeric.summary, numeric.fit, cols:select and cols:row use the raw length", function()
    local r = clean(sub [[
      local function liar(t) return setmetatable(t, { __len = function() return 2^61 + 4 end }) end
      local xs, ys = {}, {}
      for i = 1, 100000 do xs[i] = i; ys[i] = 2 * i end
      try("summarize", function() return pp.numeric.summary(liar(xs)).count end)
      try("fit", function() return pp.numeric.fit(liar(xs), liar(ys)).n end)
      local c = pp.parse.string("p a=1 b=2\np a=3 b=4\n")
      try("select", function() return #c:select(liar({ 2, 1, 2 })) end)
      try("row", function() return tostring(c:row(2, liar({ "b" }))) end)
      try("fits", function() return c:fits(liar({ "a" }), liar({ "b" })).b.a.n end)
      try("lincomb", function() return c:lincomb(liar({ { "a", 1 }, { "b", 1 } })).count end)
    ]])
    assert.are.equal("ok | 100000", r.summarize)
    assert.are.equal("ok | 100000", r.fit)
    assert.are.equal("ok | 2", r.select)
    assert.are.equal("ok | p b=4", r.row)
    assert.are.equal("ok | 2", r.fits)
    assert.are.equal("ok | 2", r.lincomb)
  end)

  it("option lists (parser prefixes, PTX markers, schema names) are read by their raw length", function()
    local function liar(t) return setmetatable(t, { __len = function() error("__len consulted") end }) end
    local ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n// MARK\nret;\n}\n"
    assert.are.equal(1, pp.ptx.scan(ptx, { markers = liar { "MARK" } }).markers.MARK)
    local _, rep = pp.parse.string("pfx a=1\n", { prefix = liar { "pfx" }, numeric = liar { "a" } })
    assert.are.equal(1, rep.parsed)
    local s = pp.schema { prefix = "rawlen", phases = liar { "one" }, counts = liar { "items" }, use = false }
    assert.are.same({ "one" }, s.phases)
  end)
end)

describe("buffer downloads check count times element size (#12 defect 3)", function()
  it("buf:download(type, n) with n * size past 2^64 raises", function()
    local r = with_fake [[
      local buf = ctx:alloc(64)
      try("wrap", function() return buf:download("f32", 1 << 62) end)
      try("past", function() return buf:download("f64", 9) end)
      try("offset", function() return buf:download("u8", 1, 64) end)
      try("fits", function() return #buf:download("f64", 8) end)
    ]]
    if not r then return end
    assert.matches("error: .*do not fit", r.wrap)
    assert.matches("error: .*do not fit", r.past)
    assert.matches("error: .*do not fit", r.offset)
    assert.are.equal("ok | 8", r.fits)
  end)
end)

describe("a parser closed inside its own callback (#12 defect 4)", function()
  it("p:lines stops and raises when its iterator closes the parser", function()
    local r = clean(sub [[
      local p = pp.parse.new()
      local n = 0
      try("lines", p.lines, p, function()
        n = n + 1
        if n == 3 then p:close(); collectgarbage() end
        if n < 1000 then return "x a=" .. n end
      end)
      report("calls", n)
      try("after", p.finish, p)
      report("str", tostring(p))
    ]])
    assert.matches("error: .*closed inside its own callback", r.lines)
    assert.are.equal("3", r.calls)
    assert.matches("closed parser", r.after)
    assert.are.equal("phaseprobe.parser (closed)", r.str)
  end)

  it("p:file stops and raises when its progress callback closes the parser", function()
    local big = os.tmpname()
    files.spit(big, ("x a=1\n"):rep(3500000)) -- 21 MB: past the first progress call
    local r = clean(sub([[
      local p = pp.parse.new()
      local calls = 0
      try("file", p.file, p, ]] .. ("%q"):format(big) .. [[, function()
        calls = calls + 1
        p:close(); collectgarbage()
      end)
      report("calls", calls)
    ]]))
    os.remove(big)
    assert.matches("error: .*closed inside its own callback", r.file)
    assert.are.equal("1", r.calls)
  end)

  it("a progress callback that raises stops the reading at once", function()
    local big = os.tmpname()
    files.spit(big, ("x a=1\n"):rep(8000000)) -- 48 MB: three progress calls
    local calls = 0
    local p <close> = pp.parse.new()
    local ok, err = pcall(p.file, p, big, function()
      calls = calls + 1
      error("enough")
    end)
    os.remove(big)
    assert.is_false(ok)
    assert.matches("progress callback: .*enough", err)
    assert.are.equal(1, calls)
    -- what was read before the stop is kept
    local cols = p:finish()
    assert.is_true(cols:count() > 0)
  end)
end)

describe("a handle closed by a finalizer while its own call runs (fuzzer, seed 4)", function()
  -- Every allocation may run pending finalizers; one that closes the
  -- parser or the column store whose method is running must not free what
  -- that method still reads. The method finishes on what it had; the
  -- handle is closed afterwards.
  local function closing_run(call, check)
    return clean(sub([[
      local text = {}
      for i = 1, 50 do text[i] = ("p a=%d s=x%d"):format(i, i) end
      text = table.concat(text, "\n") .. "\n"
      local closed, good, during, refused, bad, after, inside = 0, 0, 0, 0, 0, 0, 0
      local check = ]] .. check .. [[
      for round = 1, 300 do
        local target = ]] .. call .. [[
        collectgarbage("stop")
        for i = 1, 50 do
          setmetatable({}, { __gc = function() target:close(); closed = closed + 1 end })
        end
        collectgarbage("restart")
        collectgarbage("incremental", 0, 1000, 0)
        local before = closed
        local ok, res = pcall(check, target)
        local now = closed
        collectgarbage("incremental", 200, 100, 13)
        if ok and res == true then
          good = good + 1
          if now > before then during = during + 1 end
        elseif not ok and tostring(res):find("inside its own callback", 1, true) then
          inside = inside + 1 -- closed while it ran Lua code of ours
        elseif not ok and tostring(res):find("closed", 1, true) then
          refused = refused + 1 -- closed before the call began
        else
          bad = bad + 1
          report("bad" .. bad, tostring(res))
        end
        if now > 0 and not pcall(function() return #target end) then after = after + 1 end
        collectgarbage()
      end
      report("counts", good, during, refused, bad, after)
      report("inside", inside > 0)
      report("during", during > 0)
      report("bad", bad)
    ]]))
  end

  it("p:finish builds its columns and report from a parser a finalizer closes", function()
    local r = closing_run([[pp.parse.new(); target:string(text)]],
      [[function(p) local c, rep = p:finish(); return #c == 50 and rep.parsed == 50 and rep.total == 50 end]])
    assert.are.equal("0", r.bad, r._out)
    assert.are.equal("true", r.during, r.counts)
  end)

  it("column methods read a store a finalizer closes", function()
    local r = closing_run([[pp.parse.string(text)]],
      [[function(c) local v = c:values("s"); return #v == 50 and v[50] == "x50" end]])
    assert.are.equal("0", r.bad, r._out)
    assert.are.equal("true", r.during, r.counts)
    r = closing_run([[pp.parse.string(text)]],
      [[function(c) local g = c:group("s"); return #g == 50 and g[50].key == "x50" end]])
    assert.are.equal("0", r.bad, r._out)
    assert.are.equal("true", r.during, r.counts)
  end)

  it("p:lines turns numbers into text while the parser is busy", function()
    local r = closing_run([[pp.parse.new()
        I = 0
        ITER = ITER or function() I = I + 1; if I <= 50 then return I * 1.5 end end]],
      [[function(p) p:lines(ITER); return true end]])
    assert.are.equal("0", r.bad, r._out)
    assert.are.equal("true", r.inside, r.counts)
  end)
end)

describe("option strings outlive the calls that read them (#12 defect 5)", function()
  -- An options table whose __index makes fresh strings and lists, collects
  -- garbage and allocates strings of every small size, so that a string
  -- used after its last reference went would read someone else's bytes.
  local HOSTILE = [[
    local junk = {}
    local function churn()
      collectgarbage(); collectgarbage()
      for i = 1, 3000 do junk[i % 1000 + 1] = ("Z"):rep(i % 80 + 1) .. "" end
    end
    function hostile(fresh)
      return setmetatable({}, { __index = function(_, k)
        local v = fresh[k]
        if type(v) == "function" then v = v() end
        churn()
        return v
      end })
    end
  ]]

  it("parser options: prefix, numeric and source", function()
    local r = clean(sub(HOSTILE .. [[
      local opts = hostile {
        prefix = function() return ("pfx_"):rep(3) .. "x" end,
        numeric = function() return { ("num"):rep(2) .. "_field" } end,
        source = function() return ("src"):rep(5) .. "_name" end,
      }
      local c, rep = pp.parse.string("pfx_pfx_pfx_x numnum_field=7 other=1\nnoise\n", opts)
      report("parsed", rep.parsed, rep.file, c:get(1, "numnum_field"))
      local c2, rep2 = pp.parse.lines(("x a=1\n"):gmatch("[^\n]+"), opts)
      report("lines", rep2.file)
    ]]))
    assert.are.equal("1 | srcsrcsrcsrcsrc_name | 7", r.parsed)
    assert.are.equal("srcsrcsrcsrcsrc_name", r.lines)
  end)

  it("schema definitions: prefix and name lists", function()
    local r = clean(sub(HOSTILE .. [[
      local s = pp.schema(hostile {
        prefix = function() return ("pre"):rep(4) .. "-fix" end,
        phases = function() return { ("alpha"):rep(2), ("beta"):rep(3) } end,
        nested = function() return { ("alpha"):rep(2) .. "_inner" } end,
        counts = function() return { ("items"):rep(2) } end,
        caches = function() return { ("store"):rep(2) } end,
        use = false,
      })
      report("s", s.prefix, table.concat(s.phases, ","), table.concat(s.nested, ","),
        table.concat(s.counts, ","), table.concat(s.caches, ","))
    ]]))
    assert.are.equal("prepreprepre-fix | alphaalpha,betabetabeta | alphaalpha_inner | itemsitems | storestore", r.s)
  end)

end)

describe("metamethods called directly check their argument (#12 defect 7)", function()
  it("the scope's __close, a record's __tostring and a schema's __index refuse foreign values", function()
    local r = clean(sub [[
      pp.enable(); pp.sink("none"); pp.begin()
      try("close", getmetatable(pp.phase("ptx")).__close, {})
      try("close_nil", getmetatable(pp.phase("ptx")).__close)
      local rec = pp.emit()
      try("tostring", getmetatable(rec).__tostring, 42)
      try("schema", getmetatable(pp.schema()).__index, {}, "prefix")
      local p = pp.parse.new()
      try("parser_gc", getmetatable(p).__gc, io.stdout)
      try("cols_len", getmetatable(pp.parse.string("p a=1")).__len, p)
    ]])
    assert.matches("error: .*bad argument #1 .*phaseprobe%.scope expected, got table", r.close)
    assert.matches("error: .*bad argument #1 .*phaseprobe%.scope expected, got no value", r.close_nil)
    assert.matches("error: .*phaseprobe%.record expected, got number", r.tostring)
    assert.matches("error: .*phaseprobe%.schema expected", r.schema)
    assert.matches("error: .*phaseprobe%.parser expected", r.parser_gc)
    assert.matches("error: .*phaseprobe%.columns expected", r.cols_len)
  end)
end)

describe("class metatables cannot be changed from Lua (#12 sweep)", function()
  it("getmetatable(obj) reads the class's fields and refuses writes; setmetatable refuses", function()
    local r = clean(sub [[
      local p = pp.parse.new()
      local view = getmetatable(p)
      report("same", view.__gc == debug.getmetatable(p).__gc, view.__name)
      try("write", function() view.__gc = nil end)
      report("kept", type(debug.getmetatable(p).__gc))
      try("set", setmetatable, pp.stats(), nil)
      try("view_mt", getmetatable, view)
      p:close()
      collectgarbage()
    ]])
    assert.are.equal("true | phaseprobe.parser", r.same)
    assert.matches("error: .*the metatable of phaseprobe%.parser is read%-only", r.write)
    assert.are.equal("function", r.kept)
    assert.matches("error: .*cannot change a protected metatable", r.set)
    assert.are.equal("ok | false", r.view_mt)
  end)
end)

describe("a class's __eq answers false for a foreign value, never raises (#12 sweep: the API fuzzer)", function()
  it("schemas compared with files, tables and numbers, either side, and by hand", function()
    local s = pp.schema()
    assert.is_true(s == pp.schema())
    assert.is_false(s == io.stdout)
    assert.is_false(io.stdout == s)
    assert.is_false(s == pp.parse.new())
    local eq = getmetatable(s).__eq
    assert.is_false(eq(s, {}))
    assert.is_false(eq(1, s))
    assert.is_false(eq())
    assert.is_true(eq(s, pp.schema()))
  end)
end)

describe("the current schema is per thread (#12 defect 12)", function()
  it("C threads: each dispatch opens under its own thread's schema; a new thread starts with the default", function()
    shell.prints("build/schema_threads 20000 2>&1", "^ok dispatches=60000 wrong=0")
  end)

  it("Lua states in threads: pp.use in one never reaches another's dispatches", function()
    local ok, out = shell.run("build/multi_state 3 spec/fixtures/scripts/multi_state_schema.lua 2>&1")
    assert.is_true(ok, out)
    for t = 0, 2 do
      assert.truthy(out:find(("thread %d: dispatches=20000 wrong=0"):format(t), 1, true), out)
    end
  end)
end)

describe("the ptx command (#12 defect 14)", function()
  local sh = require("helpers.shell").status

  it("a missing file or a directory is a clean error, exit 1, no traceback", function()
    local rc, out = sh(q(ROOT .. "/bin/phaseprobe") .. " ptx /nonexistent/x.ptx")
    assert.are.equal(1, rc, out)
    assert.matches("^phaseprobe ptx: .*/nonexistent/x%.ptx.*No such file or directory\n$", out)
    local rc2, out2 = sh(q(ROOT .. "/bin/phaseprobe") .. " ptx /tmp")
    assert.are.equal(1, rc2, out2)
    assert.matches("^phaseprobe ptx: .*/tmp.*directory\n$", out2)
    assert.falsy(out2:find("traceback", 1, true))
  end)
end)

describe("every command fails when standard output cannot be written (#12 defect 15)", function()
  local FIXTURE = "spec/fixtures/logs/mixed.log"
  local PTX = "spec/fixtures/ptx/vyre_grid3.ptx"
  -- lines of the fixture that every command accepts
  local CLEAN = os.tmpname()
  do
    local keep, n = {}, 0
    for l in io.lines(FIXTURE) do
      n = n + 1
      if n == 1 or n == 4 or n == 8 or n == 14 then keep[#keep + 1] = l end
    end
    files.spit(CLEAN, table.concat(keep, "\n") .. "\n")
  end
  teardown(function() os.remove(CLEAN) end)
  local bin = q(ROOT .. "/bin/phaseprobe")
  local cases = {
    { "report", "report --lenient " .. FIXTURE },
    { "fit", "fit --lenient --phase ptx " .. FIXTURE },
    { "compare", "compare --lenient --by shape prose cjk " .. FIXTURE },
    { "whatif", "whatif --lenient --remove ptx_digest " .. FIXTURE },
    { "ptx", "ptx " .. PTX },
    { "ptx from stdin", "ptx - < " .. PTX },
    { "export", "export --jsonl " .. CLEAN },
    { "trace", "trace " .. CLEAN },
    { "html", "html " .. CLEAN },
    { "plot", "plot --phase ptx " .. CLEAN },
    { "demo", "demo --replay " .. "spec/fixtures/demo-cpu-double.log" },
    { "help", "help" },
    { "--help", "--help" },
    { "a command's --help", "report --help" },
    { "--version", "--version" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      local p = io.popen(bin .. " " .. c[2] .. " > /dev/full 2>&1; echo \"rc=$?\"")
      local out = p:read("a")
      p:close()
      local rc = tonumber(out:match("rc=(%d+)\n$"))
      assert.are_not.equal(0, rc, out)
      assert.falsy(out:find("traceback", 1, true), out)
    end)
  end
end)

describe("reading is bounded (#12 defect 16)", function()
  it("a per-input cap of at least 8 GiB by default for logs, 1 GiB for PTX", function()
    assert.is_true(pp.parse.max_bytes >= 8 * 2^30)
    assert.are.equal(1 << 30, pp.ptx.max_bytes)
  end)

  it("pp.parse.file on /dev/zero stops at the cap with nil, message, in bounded memory", function()
    local r = clean(sub([[
      local c, err = pp.parse.file("/dev/zero", { max_bytes = 64 << 20 })
      report("zero", c, err)
      report("kb", collectgarbage("count") < 4096)
      local p = pp.parse.new { max_bytes = 1 << 20 }
      report("string", p:string(("x a=1\n"):rep(100)) == p)
      report("over", p:file("/dev/zero"))
      local cols, rep = p:finish()
      report("kept", cols:count(), rep.parsed)
    ]], { timeout = 60 }))
    assert.matches("^nil | .*/dev/zero.*67108864 bytes.*max_bytes", r.zero)
    assert.are.equal("true", r.string)
    assert.matches("^nil | .*/dev/zero.*1048576 bytes.*max_bytes", r.over)
    assert.are.equal("100 | 100", r.kept)
  end)

  it("standard input is capped the same way", function()
    local r = clean(sub([[
      report("stdin", pp.parse.file("-", { max_bytes = 1 << 20 }))
    ]], { stdin = "/dev/zero", timeout = 60 }))
    assert.matches("^nil | %(stdin%).*1048576 bytes.*max_bytes", r.stdin)
  end)

  it("a line longer than the parser's line limit is counted, not kept whole", function()
    local long = ("y"):rep(pp.parse.max_line + 10)
    local _, rep = pp.parse.string("p a=" .. long .. "\nnoise " .. long .. "\np b=2\n")
    assert.are.equal(3, rep.total)
    assert.are.equal(1, rep.parsed)
    assert.are.equal(1, rep.rejected)
    assert.are.equal(1, rep.other)
    assert.matches("longer than " .. pp.parse.max_line, rep.errors[1].what)
  end)

  it("pp.ptx.scan_file on endless text or a directory returns nil, message", function()
    local r = clean(sub([[
      local fifo = endless()
      report("endless", pp.ptx.scan_file(fifo, { max_bytes = 1 << 20 }))
      os.remove(fifo)
      report("dir", pp.ptx.scan_file("/tmp"))
      report("missing", pp.ptx.scan_file("/nonexistent.ptx"))
    ]], { timeout = 60 }))
    assert.matches("^nil | pp%.ptx%.scan_file: .* is larger than 1048576 bytes.*max_bytes", r.endless)
    assert.matches("^nil | pp%.ptx%.scan_file: .*/tmp.*directory", r.dir)
    assert.matches("^nil | pp%.ptx%.scan_file: .*No such file", r.missing)
  end)
end)

-- Beyond the listed defects: what the sweep over the bindings found.
describe("CUDA launch descriptions read through __index (#12 sweep)", function()
  local PTX = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry noargs()\n{\n  ret;\n}\n"
  it("a description that closes the module, the stream or the window is refused after reading", function()
    local r = with_fake(([[
      local function fn() return ctx:load(%q):func("noargs") end
      local f1 = fn()
      try("module", f1.launch, f1, setmetatable({ grid = 1, block = 1 }, { __index = function(_, k)
        if k == "args" then f1.module:close() end
      end }))
      local s = ctx:stream()
      local t = { grid = 1, block = 1, stream = s }
      setmetatable(t, { __index = function(_, k)
        if k == "args" and s then t.stream = nil; s:close(); s = nil; collectgarbage(); collectgarbage() end
      end })
      local f2 = fn()
      try("stream", f2.launch, f2, t)
      local w = ctx.stream:window()
      local f3 = fn()
      try("window", w.launch_loop, w, setmetatable({ fn = f3, grid = 1, block = 1 }, { __index = function(_, k)
        if k == "args" then w:discard() end
      end }))
      local st = ctx:stream()
      try("timed", st.timed, st, setmetatable({ fn = f3, grid = 1, block = 1 }, { __index = function(_, k)
        if k == "args" then st:close() end
      end }))
      try("fine", f3.launch, f3, { grid = 1, block = 1 })
    ]]):format(PTX))
    if not r then return end
    assert.matches("error: .*closed module", r.module)
    assert.matches("error: .*closed stream", r.stream)
    assert.matches("error: .*closed window", r.window)
    assert.matches("error: .*closed stream", r.timed)
    assert.are.equal("ok", r.fine)
  end)

  it("ctx:load_file is bounded like every whole-file read", function()
    local r = with_fake [[
      local fifo = endless()
      report("endless", ctx:load_file(fifo, { max_bytes = 1 << 20 }))
      os.remove(fifo)
      report("dir", ctx:load_file("/tmp"))
    ]]
    if not r then return end
    assert.matches("^nil | ctx:load_file: '.*' is larger than 1048576 bytes", r.endless)
    assert.matches("^nil | ctx:load_file: cannot read '/tmp': Is a directory", r.dir)
  end)

  it("a launch loop tried again after a failure reuses its events (the Lua API fuzzer, seed 23: a leak)", function()
    local r = with_fake(([[
      local f = ctx:load(%q):func("noargs")
      for _, ending in ipairs { "collect", "discard" } do
        local w = ctx.stream:window()
        -- more shared memory than the device has: the launch fails, after the events were taken
        try("fails", w.launch_loop, w, { fn = f, grid = 1, block = 1, shared = 1 << 20 })
        try("again", w.launch_loop, w, { fn = f, grid = 1, block = 1 })
        w:close()
        w[ending](w)
        report(ending, ctx.events_idle == ctx.events_created, ctx.events_created)
      end
    ]]):format(PTX))
    if not r then return end
    assert.matches("^error: .*CUDA_ERROR_INVALID_VALUE", r.fails)
    assert.matches("^ok", r.again)
    assert.matches("^true | ", r.collect)
    assert.matches("^true | ", r.discard)
  end)

  it("ctx:load_file reads PTX text up to its first NUL byte, a cubin or fatbin whole", function()
    local text, elf = os.tmpname(), os.tmpname()
    files.spit(text, PTX .. "\0after the NUL\0")
    files.spit(elf, "\127ELF" .. PTX .. "\0after the NUL\0")
    local r = with_fake(([[
      report("text", assert(ctx:load_file(%q)).ptx_bytes)
      report("elf", assert(ctx:load_file(%q)).ptx_bytes)
    ]]):format(text, elf))
    os.remove(text)
    os.remove(elf)
    if not r then return end
    assert.are.equal(tostring(#PTX), r.text)
    assert.are.equal(tostring(4 + #PTX + 15), r.elf)
  end)
end)

describe("a device buffer prints its address once (#12 sweep)", function()
  it("tostring(buf) says 0x and the hex digits of buf.ptr", function()
    local r = with_fake [[
      local b = ctx:alloc(64)
      report("text", tostring(b))
      report("want", ("phaseprobe.cuda.buffer (64 bytes at 0x%x)"):format(b.ptr))
      b:free()
      report("freed", tostring(b))
    ]]
    if not r then return end
    assert.matches("^phaseprobe%.cuda%.buffer %(64 bytes at 0x%x+%)$", r.text)
    assert.are.equal(r.want, r.text)
    assert.are.equal("phaseprobe.cuda.buffer (freed)", r.freed)
  end)
end)

describe("other readers are bounded too (#12 sweep)", function()
  it("export.read_csv and read_jsonl stop at max_bytes with nil, message", function()
    local export = require "phaseprobe.output.export"
    assert.is_true(export.MAX_BYTES >= 8 * 2^30)
    local r = clean(sub [[
      local export = require "phaseprobe.output.export"
      report("csv", export.read_csv("/dev/zero", { max_bytes = 1 << 20 }))
      report("jsonl", export.read_jsonl("/tmp"))
    ]])
    assert.matches("^nil | export%.read_csv: '/dev/zero' is larger than 1,048,576 bytes", r.csv)
    assert.matches("^nil | export%.read_jsonl: cannot read '/tmp': Is a directory", r.jsonl)
  end)

  it("export.read_csv and read_jsonl close the file when they refuse it, not at a collection", function()
    local bad_csv, bad_jsonl = os.tmpname(), os.tmpname()
    files.spit(bad_csv, "a,a\n1,2\n")
    files.spit(bad_jsonl, "{\"a\": 1}\nnot json\n")
    local r = clean(sub(([[
      local export = require "phaseprobe.output.export"
      -- (the shell io.popen starts is a child of this process; the pipe
      -- it writes to is left out, since this process may or may not have
      -- closed its own copy of the write end by the time it is listed, and
      -- so is a descriptor closed between the listing and its readlink)
      local function fds()
        local p = io.popen('me=$(readlink /proc/$$/fd/1); for f in /proc/$PPID/fd/*; do '
          .. 'l=$(readlink "$f") && [ "$l" != "$me" ] && echo; done | wc -l')
        local n = tonumber(p:read("a"))
        p:close()
        return n
      end
      collectgarbage("stop")
      -- once first: what the first call opens for good (a module loaded on
      -- first use) is not a file left open per refusal
      assert(not export.read_csv(%q))
      assert(not export.read_jsonl(%q))
      local before = fds()
      for _ = 1, 50 do
        assert(not export.read_csv(%q))
        assert(not export.read_jsonl(%q))
      end
      report("fds", fds() - before)
    ]]):format(bad_csv, bad_jsonl, bad_csv, bad_jsonl)))
    os.remove(bad_csv)
    os.remove(bad_jsonl)
    assert.are.equal("0", r.fds)
  end)
end)

describe("every reader's memory stays bounded at its default caps (#12)", function()
  -- Each reader runs in its own interpreter on /dev/zero with no option, and
  -- that interpreter's peak resident set (VmHWM) is read at its exit: plain
  -- lua5.4 always (under valgrind the figure would be valgrind's own). Outside
  -- the sanitizers (which reserve address space of their own) the child's
  -- address space is capped at 4 GiB, so a regression fails the case instead
  -- of taking the machine's memory.
  local LIMIT_KB = 200 * 1024
  local guard = os.getenv("PHASEPROBE_SANITIZED") and "" or "ulimit -v 4194304; "
  local HOOK = [[
local function hwm()
  local f = io.open("/proc/self/status")
  local s = f:read("a")
  f:close()
  io.stderr:write("\nVmHWM_kB=", s:match("VmHWM:%s*(%d+)"), "\n")
end
local exit = os.exit
os.exit = function(...) hwm() return exit(...) end
]]
  -- Runs `lua5.4 -e HOOK ARGS < stdin`: its peak in kB, its output.
  local function peak(args, stdin, env)
    local cmd = ("%s%stimeout 120 lua5.4 -e %s %s < %s"):format(guard, env or "", q(HOOK), args,
      stdin or "/dev/null")
    local _, out = shell.run(cmd)
    assert.falsy(out:find("AddressSanitizer", 1, true), out)
    assert.falsy(out:find("runtime error", 1, true), out)
    return tonumber(out:match("VmHWM_kB=(%d+)")), out
  end
  local function api(code, stdin)
    return peak("-e " .. q(PRELUDE .. code .. "\nos.exit(0)"), stdin)
  end
  local function bounded(kb, out)
    assert.is_number(kb, out)
    assert.is_true(kb < LIMIT_KB, ("peak %d kB:\n%s"):format(kb, out))
  end

  it("pp.parse.file and standard input", function()
    local kb, out = api [[report("file", pp.parse.file("/dev/zero"))]]
    bounded(kb, out)
    assert.matches("file\tnil | /dev/zero: input larger than 8589934592 bytes", out)
    kb, out = api([[report("stdin", pp.parse.file("-"))]], "/dev/zero")
    bounded(kb, out)
    assert.matches("stdin\tnil | %(stdin%): input larger than 8589934592 bytes", out)
  end)

  it("pp.ptx.scan_file reads up to the first NUL byte, where the scanner and the driver stop", function()
    local kb, out = api [[
      local r = pp.ptx.scan_file("/dev/zero")
      report("scan", r.partial, r.truncated, r.bytes, r.errors[1].what, r.errors[1].offset)
    ]]
    bounded(kb, out)
    assert.matches("scan\ttrue | true | 1 | NUL byte | 0\n", out)
  end)

  it("export.read_csv and export.read_jsonl read a line at a time, at most 1 MiB of one", function()
    for _, fn in ipairs { "read_csv", "read_jsonl" } do
      local kb, out = api(([[
        local export = require "phaseprobe.output.export"
        report("read", export.%s("/dev/zero"))
      ]]):format(fn))
      bounded(kb, out)
      assert.matches("read\tnil | export%." .. fn .. ": /dev/zero:1: a line longer than 1,048,576 bytes", out)
    end
  end)

  it("ctx:load_file reads a text image up to its first NUL byte", function()
    if not sub_cuda.fake_ready() then
      pending("needs the CUDA headers and build/libfakecuda.so")
      return
    end
    local kb, out = peak("-e " .. q(PRELUDE .. [[
      local ctx = assert(pp.cuda.context(0))
      try("load", ctx.load_file, ctx, "/dev/zero")
      os.exit(0)]]), nil, "PHASEPROBE_LIBCUDA=" .. sub_cuda.fake .. " ")
    bounded(kb, out)
    assert.matches("load\t", out)
  end)

  it("a regular file over the cap is refused by its size, unread", function()
    local big = os.tmpname()
    assert(os.execute("truncate -s 16G " .. q(big)))
    local kb, out = api(([[
      local big = %q
      local export = require "phaseprobe.output.export"
      report("scan", pp.ptx.scan_file(big))
      report("csv", export.read_csv(big))
      report("jsonl", export.read_jsonl(big))
      report("small", pp.ptx.scan_file(big, { max_bytes = 1000 }))
    ]]):format(big))
    os.remove(big)
    bounded(kb, out)
    assert.matches("scan\tnil | pp%.ptx%.scan_file: '[^']+' is larger than 1073741824 bytes", out)
    assert.matches("csv\tnil | export%.read_csv: '[^']+' is larger than 8,589,934,592 bytes", out)
    assert.matches("jsonl\tnil | export%.read_jsonl: '[^']+' is larger than 8,589,934,592 bytes", out)
    assert.matches("small\tnil | pp%.ptx%.scan_file: '[^']+' is larger than 1000 bytes", out)
  end)

  it("phaseprobe ptx and phaseprobe report", function()
    local kb, out = peak("bin/phaseprobe ptx /dev/zero")
    bounded(kb, out)
    assert.matches("/dev/zero:1:1: NUL byte", out)
    kb, out = peak("bin/phaseprobe ptx -", "/dev/zero")
    bounded(kb, out)
    assert.matches("%(stdin%):1:1: NUL byte", out)
    kb, out = peak("bin/phaseprobe report /dev/zero")
    bounded(kb, out)
    assert.matches("input larger than 8589934592 bytes", out)
  end)
end)
