-- Analysis that says what it sees (issue 13, items 13 to 15): records whose
-- named phases exceed their wall; quantities with too little support to
-- decide a verdict, and quantities that move together; logs that mix
-- variants behaving differently.
local records = require "phaseprobe.records"
local analyze = require "phaseprobe.analysis.analyze"

-- A deterministic noise source in [-1, 1).
local function noise(seed)
  local s = seed
  return function()
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 1073741824 - 1
  end
end

local PHASES = { "prepare", "ptx", "modkey", "stage", "resolve", "lease", "launch", "release",
  "readback" }

-- A reference-format line; t gives phase ns (missing: a flat 10 us with
-- 10 % noise), nodes, ptx_bytes, misses, extra text.
local function line(i, t, r)
  local v, named = {}, 0
  for _, p in ipairs(PHASES) do
    v[p] = t[p] or math.floor(10000 * (1 + 0.1 * r()))
    named = named + v[p]
  end
  local wall = t.wall or (named + 3000)
  local un = math.max(0, wall - named)
  return string.format("vyre-cuda-dispatch-phase seq=%d nodes=%d ptx_bytes=%d buffers=4 "
    .. "bindings=5 fixpoint=1 grid_blocks=16 wall_ns=%d enqueue_ns=%d wait_ns=0 "
    .. "device_window_ns=0 kernel_ns=0 prepare_ns=%d ptx_ns=%d modkey_ns=%d stage_ns=%d "
    .. "resolve_ns=%d lease_ns=%d launch_ns=%d release_ns=%d readback_ns=%d "
    .. "sub_ptx_digest_ns=0 sub_ptx_vsa_ns=0 named_host_ns=%d unattributed_ns=%d "
    .. "ptx_cache_hits=%d ptx_cache_misses=%d%s", i, t.nodes or 100, t.ptx_bytes or 3000, wall,
    wall, v.prepare, v.ptx, v.modkey, v.stage, v.resolve, v.lease, v.launch, v.release,
    v.readback, named, un, 0, t.misses or 0, t.extra or "")
end

local function set_of(lines)
  return (records.from_string(table.concat(lines, "\n")))
end

local command = require "helpers.command"
local run = command.run
local tmpfile = require("helpers.files").tmpfile

local function verdict_of(s, name)
  for _, list in ipairs { s.phases, s.nested } do
    for _, v in ipairs(list) do if v.name == name then return v end end
  end
end

describe("records whose named phases exceed wall", function()
  -- the reference prints such records (the caller passed its own wall) and
  -- saturates unattributed_ns to 0
  local function data()
    local r, lines = noise(7), {}
    for i = 1, 200 do
      local t = { nodes = 100 }
      if i % 50 == 0 then
        -- named 90 us, wall 89, 88, 87 and 86 us
        for _, p in ipairs(PHASES) do t[p] = 10000 end
        t.wall = 90000 - 1000 * (i // 50)
      end
      lines[i] = line(i, t, r)
    end
    return lines
  end

  it("are counted, the worst shown, and what it means said", function()
    local set = set_of(data())
    local o = analyze.overrun(set)
    assert.are.equal(4, o.n)
    assert.are.equal(200, o.of)
    assert.are.equal(200, o.worst.seq)
    assert.are.equal(90000, o.worst.named)
    assert.are.equal(86000, o.worst.wall)
    assert.are.equal(200, o.worst.line)
    assert.is_true(o.worst.named > o.worst.wall)
    assert.are.equal(o.worst.named - o.worst.wall, o.max_over)
    local path = tmpfile(data())
    local rc, out = run("report", path)
    os.remove(path)
    assert.are.equal(0, rc)
    assert.matches("named phases exceed wall_ns on 4 of 200 records %(2%.0%%%)", out)
    assert.matches("worst: seq=200 %(" .. path:gsub("%p", "%%%0") .. ":200%), named 90%.0 us, wall 86%.0 us", out)
    assert.matches("unattributed_ns is 0 on them", out)
  end)

  it("are counted and explained by fit and by the HTML page too", function()
    local path = tmpfile(data())
    local rc, out, err = run("fit", path)
    local set = set_of(data())
    local page = require("phaseprobe.output.html").report(set, {})
    os.remove(path)
    assert.are.equal(0, rc, err)
    assert.matches("named phases exceed wall_ns on 4 of 200 records %(2%.0%%%)", out)
    assert.matches("unattributed_ns is 0 on them", out)
    -- the page says it near its top, in one paragraph
    local note = page:match('<p class="warning">(note: named phases exceed wall_ns[^<]*)</p>')
    assert.truthy(note, "no overrun note in the page")
    assert.matches("on 4 of 200 records %(2%.0%%%)", note)
    assert.is_true(page:find(note, 1, true) < page:find("<h2>", 1, true))
  end)

  it("are not mentioned when there are none", function()
    local r, lines = noise(3), {}
    for i = 1, 50 do lines[i] = line(i, {}, r) end
    assert.are.equal(0, analyze.overrun(set_of(lines)).n)
    local path = tmpfile(lines)
    local _, out = run("report", path)
    os.remove(path)
    assert.is_nil(out:find("exceed wall", 1, true))
  end)
end)

describe("a quantity's support", function()
  -- 2000 records, ptx_cache_misses 1, 2, 3 on 1, 1 and 1998 of them (the
  -- odd two are slow in every phase); the flat phases must stay "fixed"
  local function data(collinear)
    local r, lines = noise(11), {}
    local sizes = { 100, 1000, 5000 }
    for i = 1, 2000 do
      local nodes = sizes[(i - 1) % 3 + 1]
      local t = { nodes = nodes, misses = 3, ptx = 5000 + 50 * nodes + math.floor(500 * r()),
        ptx_bytes = collinear and 30 * nodes or math.floor(3000 + 2000 * (r() + 1)) }
      if i == 5 or i == 6 then
        t.misses = i == 5 and 1 or 2
        for _, p in ipairs(PHASES) do t[p] = t[p] or 90000 end
      end
      lines[i] = line(i, t, r)
    end
    return set_of(lines)
  end

  it("needs 3 values each on 5% of the records or 30 of them before it may decide", function()
    local s = analyze.scaling(data(false))
    for _, p in ipairs { "prepare_ns", "modkey_ns", "stage_ns", "readback_ns" } do
      assert.are.equal("fixed per dispatch", verdict_of(s, p).verdict, p)
    end
    local v = verdict_of(s, "ptx_ns")
    assert.are.equal("scales with nodes", v.verdict)
    local u
    for _, x in ipairs(s.untested) do if x.name == "ptx_cache_misses" then u = x end end
    assert.truthy(u, "ptx_cache_misses is named as not used")
    assert.matches("1 of 3 values", u.why)
    -- said in the report
    local text = require("phaseprobe.output.report").scaling(s)
    assert.matches("not used for verdicts %(a quantity needs 3 values.-%): .*ptx_cache_misses", text)
  end)

  it("says when a phase fits two quantities that move together, rather than picking one", function()
    local s = analyze.scaling(data(true))
    local v = verdict_of(s, "ptx_ns")
    assert.are.equal("scales with nodes or ptx_bytes", v.verdict)
    assert.are.same({ "ptx_bytes" }, v.collinear)
    assert.matches("nodes and ptx_bytes move together", v.reason)
    assert.are.equal("nodes", v.quantity)
    -- independent quantities: one verdict
    local s2 = analyze.scaling(data(false))
    assert.is_nil(verdict_of(s2, "ptx_ns").collinear)
  end)
end)

describe("a log mixing variants", function()
  -- three shapes (nodes 100, 1000, 5000) under two knob values; with
  -- knob=memo the ptx phase costs a tenth
  local function lines_of()
    local r, lines = noise(5), {}
    local sizes = { { "small", 100 }, { "mid", 1000 }, { "large", 5000 } }
    for i = 1, 600 do
      local sh = sizes[(i - 1) % 3 + 1]
      local knob = ((i - 1) // 3) % 2 == 0 and "base" or "memo"
      local ptx = 5000 + 50 * sh[2]
      if knob == "memo" then ptx = ptx // 10 end
      lines[i] = line(i, { nodes = sh[2], ptx_bytes = 30 * sh[2],
        ptx = ptx + math.floor(200 * r()), extra = " knob=" .. knob .. " shape=" .. sh[1] }, r)
    end
    return lines
  end

  it("finds the tag that splits the phases, not the one that follows program size", function()
    local found = analyze.variants(set_of(lines_of()))
    assert.are.equal(1, #found)
    assert.are.equal("knob", found[1].tag)
    assert.are.same({ "base", "memo" }, found[1].values)
    assert.are.equal("ptx_ns", found[1].phase)
  end)

  it("is warned about, with the --where that takes one variant", function()
    local path = tmpfile(lines_of())
    local rc, out = run("report", path)
    local rc2, out2 = run("fit", path)
    local rc3, out3 = run("report", "--where", "knob=base", path)
    os.remove(path)
    assert.are.equal(0, rc)
    assert.are.equal(0, rc2)
    assert.are.equal(0, rc3)
    for _, text in ipairs { out, out2 } do
      assert.matches("warning: knob splits the records into groups whose phases behave differently", text)
      assert.matches("%-%-where knob=base", text)
    end
    assert.is_nil(out3:find("warning: knob", 1, true))
  end)

  it("is warned about by plot, on stderr and in the SVG, and by the HTML page", function()
    local path = tmpfile(lines_of())
    local svg_path = os.tmpname()
    local rc, out, err = run("plot", "--phase", "ptx_ns", "--by", "nodes", path, "-o", svg_path)
    local rc2, _, err2 = run("plot", "--phase", "ptx_ns", "--where", "knob=base", path, "-o", svg_path .. "2")
    local text = require("helpers.files").slurp(svg_path)
    os.remove(svg_path)
    os.remove(svg_path .. "2")
    local page = require("phaseprobe.output.html").report(set_of(lines_of()), {})
    os.remove(path)
    assert.are.equal(0, rc, err)
    assert.are.equal("", out)
    assert.are.equal(0, rc2, err2)
    assert.matches("warning: knob splits the records into groups whose phases behave", err)
    assert.matches("%-%-where knob=base", err)
    assert.is_nil(err2:find("warning", 1, true))
    -- in the SVG: wrapped lines of text, the --where among them
    local words = {}
    for t in text:gmatch('<text[^>]*fill="#9b1c1c"[^>]*>([^<]*)</text>') do words[#words + 1] = t end
    local said = table.concat(words, " ")
    assert.matches("knob splits the records", said)
    assert.matches("%-%-where knob=base", said)
    assert.truthy(page:find('<p class="warning">warning: knob splits', 1, true))
  end)

  it("is found in the demo's H200 log", function()
    local set = records.read("examples/data/demo-h200.log")
    local found = analyze.variants(set)
    assert.is_true(#found >= 1)
    assert.are.equal("knob", found[1].tag)
  end)

  it("is not reported for a log of one variant", function()
    local r, lines = noise(9), {}
    for i = 1, 300 do
      local n = ({ 100, 1000, 5000 })[(i - 1) % 3 + 1]
      lines[i] = line(i, { nodes = n, ptx = 5000 + 50 * n + math.floor(300 * r()),
        extra = " knob=base shape=s" .. n }, r)
    end
    assert.are.same({}, analyze.variants(set_of(lines)))
  end)
end)
