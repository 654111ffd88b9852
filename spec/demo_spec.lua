-- phaseprobe.dispatch.demo without a GPU: the record-log loader, the report, the
-- no-GPU fallback, and a live run against the CPU test double (which runs no
-- kernels: its figures are host clock readings and say nothing about a GPU).
local pp = require "phaseprobe"
local D = require "phaseprobe.dispatch"
local demo = require "phaseprobe.dispatch.demo"
local records = require "phaseprobe.records"
local cpu_device = require "helpers.cpu_device"

local FIXTURE = "spec/fixtures/demo-cpu-double.log"

local function collect()
  local lines = {}
  return lines, function(line) lines[#lines + 1] = line end
end

local function find_line(lines, pattern, plain)
  for i, l in ipairs(lines) do
    if l:find(pattern, 1, plain) then return i, l end
  end
  return nil
end

local function has_gpu()
  return D.cuda_device(0) ~= nil
end

-- records for three shapes where ptx_ns = 1000 + 50 * nodes under "base"
-- and 1000 flat under "memo_digest"; every other phase flat
local function synthetic()
  local recs = {}
  local seq = 0
  for _, sh in ipairs{ { "s", 100 }, { "m", 1000 }, { "l", 10000 } } do
    for _, knob in ipairs{ "base", "memo_digest" } do
      for k = 1, 5 do
        seq = seq + 1
        local ptx = knob == "base" and (1000 + 50 * sh[2]) or 1000
        local r = { seq = seq, nodes = sh[2], ptx_bytes = 30 * sh[2], buffers = 4, bindings = 5, fixpoint = 1,
                    grid_blocks = 8, enqueue_ns = 0, wait_ns = 0, device_window_ns = 9000, kernel_ns = 4000,
                    sub_ptx_digest_ns = ptx - 900, sub_ptx_vsa_ns = 500, shape = sh[1], knob = knob }
        for _, name in ipairs(D.PHASES) do r[name .. "_ns"] = 3000 + k end
        r.ptx_ns = ptx
        local named = 0
        for _, name in ipairs(D.PHASES) do named = named + r[name .. "_ns"] end
        r.named_host_ns = named
        r.unattributed_ns = 100
        r.wall_ns = named + 100
        recs[#recs + 1] = r
      end
    end
  end
  return recs
end

describe("phaseprobe.dispatch.demo", function()
  it("reports a recorded log, stating where and when it was recorded", function()
    local lines, out = collect()
    assert.equal(0, demo.main({ "--replay", FIXTURE }, out, false))
    -- (lines within 100 columns: a long one goes on under its first words)
    for _, l in ipairs(lines) do assert.is_true(utf8.len(l) <= 100, l) end
    local joined = table.concat(lines, "\n"):gsub("\n  (%S)", " %1")
    assert.matches("^recorded on cpu test double %(not a GPU%) %(cpu%-double, sm 9%.0, 4 SMs%) on "
      .. "%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d UTC, %d+ rounds log spec/fixtures/demo%-cpu%-double%.log\n",
      joined)
    assert.truthy(find_line(lines, "NOTE: this log was not recorded on a GPU", true))
    for _, shape in ipairs{ "small", "mid", "large" } do
      assert.truthy(find_line(lines, "^shape " .. shape .. ": "), shape)
    end
    assert.truthy(find_line(lines, "^what grows with program size"))
    assert.truthy(find_line(lines, "^  %-> ptx phase: "))
    assert.truthy(find_line(lines, "checks (as recorded):", true))
    assert.truthy(find_line(lines, "outputs: not checked", true))
    assert.truthy(find_line(lines, "^  named_host_ns %+ unattributed_ns == wall_ns in ([%d,]+) of %1 records$"))
  end)

  it("without a GPU says so in one line, then reports the recorded log", function()
    if has_gpu() then
      pending("a GPU is present here: main() runs live")
      return
    end
    local lines, out = collect()
    assert.equal(0, demo.main({ "--data", FIXTURE }, out, false))
    assert.are.equal("phaseprobe demo: no GPU here; the log recorded on the GPU machine follows "
      .. "(--verbose: why)", lines[1])
    assert.is_true(#lines[1] <= 100)
    assert.matches("^recorded on ", lines[2])
    assert.truthy(find_line(lines, "^  log spec/fixtures/demo%-cpu%-double%.log$"))
    local vlines, vout = collect()
    assert.equal(0, demo.main({ "--data", FIXTURE, "--verbose" }, vout, false))
    -- the reason pp.cuda gives: no driver (libcuda), or a module built
    -- without the toolkit's headers (a machine with no CUDA toolkit)
    -- (a long one goes on under its first words, each line within 100 columns)
    local _, why = D.cuda_device(0)
    local said = { vlines[2] }
    for i = 3, #vlines do
      if not vlines[i]:match("^    %S") then break end
      said[#said + 1] = vlines[i]:sub(5)
    end
    for _, l in ipairs(vlines) do assert.is_true(utf8.len(l) <= 100, l) end
    assert.are.equal("  why: " .. tostring(why):gsub("%s+", " "), table.concat(said, " "))
    assert.is_truthy(said[1]:find("libcuda", 1, true)
      or said[1]:find("without the CUDA toolkit headers", 1, true), said[1])
    -- a reason of any length is said whole, within the width
    local cuda = D.cuda_device
    D.cuda_device = function() return nil, ("a reason that goes on and on "):rep(12) .. "(the end)" end
    local llines, lout = collect()
    local ok, code = pcall(demo.main, { "--data", FIXTURE, "--verbose" }, lout, false)
    D.cuda_device = cuda
    assert.is_true(ok, code)
    for _, l in ipairs(llines) do assert.is_true(utf8.len(l) <= 100, l) end
    assert.matches("^  why: a reason that goes on", llines[2])
    local at = 3
    while llines[at] and not llines[at]:match("^recorded on ") do at = at + 1 end
    assert.is_true(at > 4, "the reason on several lines")
    assert.matches("^    .*%(the end%)$", llines[at - 1])
  end)

  it("fails in one line on its error stream when the recorded log is missing", function()
    local lines, out = collect()
    local errs, fail = collect()
    assert.equal(1, demo.main({ "--replay", "spec/fixtures/no-such.log" }, out, false, fail))
    assert.equal(0, #lines)
    assert.equal(1, #errs)
    assert.matches("cannot read the recorded log: spec/fixtures/no%-such%.log", errs[1])
  end)

  it("refuses unknown arguments on its error stream, and the command says so on stderr", function()
    local lines, out = collect()
    local errs, fail = collect()
    assert.equal(2, demo.main({ "--frobnicate" }, out, false, fail))
    assert.equal(0, #lines)
    assert.equal("phaseprobe demo: unknown argument '--frobnicate' (see --help)", errs[1])
    assert.equal(2, demo.main({ "--rounds", "zero" }, out, false, fail))
    local rc, stdout, stderr = require("helpers.command").run("demo", "--bogus")
    assert.equal(2, rc)
    assert.equal("", stdout)
    assert.matches("^phaseprobe demo: unknown argument '%-%-bogus'", stderr)
  end)

  it("loads record lines, tags and the run's header and checks", function()
    local log = assert(demo.load_log(FIXTURE))
    assert.equal("cpu test double (not a GPU)", log.meta.device)
    assert.equal("cpu-double", log.meta.kind)
    assert.equal("unchecked", log.checks.outputs)
    assert.is_true(#log.records > 0)
    local r = log.records[1]
    assert.equal("vyre-cuda-dispatch-phase", r._prefix)
    assert.equal("integer", math.type(r.wall_ns))
    assert.equal("small", r.shape)
    assert.equal("base", r.knob)
    assert.equal(r.wall_ns, r.named_host_ns + r.unattributed_ns)
  end)

  it("refuses a log line that is not a record, naming file and line", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("# phaseprobe-demo device=\"x\"\ndemo seq=1 wall_ns=5\nhello world\n")
    f:close()
    local log, err = demo.load_log(path)
    assert.is_nil(log)
    assert.equal(path .. ":3: not a record line (no wall_ns)", err)
    -- a truncated line of the reference's prefix: the parser's reason
    f = assert(io.open(path, "w"))
    f:write("vyre-cuda-dispatch-phase seq=1 wall_ns=5\n")
    f:close()
    log, err = demo.load_log(path)
    os.remove(path)
    assert.is_nil(log)
    assert.matches("^" .. path:gsub("%p", "%%%0") .. ":1: missing fields .* %(truncated line%?%)$", err)
  end)

  it("finds what grows with nodes and that the memo stops the ptx phase growing", function()
    local lines, out = collect()
    local res = demo.report(synthetic(), {}, out)
    assert.same({ "s", "m", "l" }, res.shapes)
    assert.same({ "base", "memo_digest" }, res.knobs)
    assert.near(50, res.slopes.ptx_ns, 1e-9)
    assert.near(0, res.slopes.modkey_ns, 1e-9)
    local _, ptx_row = find_line(lines, "^  ptx_ns ")
    assert.matches("scales with nodes$", ptx_row)
    local _, modkey_row = find_line(lines, "^  modkey_ns ")
    assert.matches("fixed per dispatch$", modkey_row)
    -- the verdicts are those of phaseprobe.analysis.fit
    local fit = require "phaseprobe.analysis.fit"
    local base = records.from_list(synthetic(), { prefix = "d" }):where { knob = "base" }
    for f, v in pairs(res.verdicts) do
      if f ~= "starvation_ns" then assert.equal(fit.verdict(base, f, { "nodes" }).verdict, v, f) end
    end
    assert.truthy(find_line(lines, "-> grows with program size: ptx_ns, sub_ptx_digest_ns", true))
    assert.is_true(res.memo.stops)
    assert.near(0, res.memo.memo_slope, 1e-9)
    assert.truthy(find_line(lines, "stops growing with program size", true))
    -- a memo that did not help is reported as such
    local recs = synthetic()
    for _, r in ipairs(recs) do
      if r.knob == "memo_digest" then r.ptx_ns = 1000 + 50 * r.nodes end
    end
    local lines2, out2 = collect()
    res = demo.report(recs, {}, out2)
    assert.is_false(res.memo.stops)
    assert.truthy(find_line(lines2, "still grows with program size with the digest memoised", true))
  end)

  it("takes its medians from the C summaries, and prints thousands separators", function()
    local fit = require "phaseprobe.analysis.fit"
    assert.equal(2, fit.summary{ 3, 1, 2 }.median)
    assert.equal(2.5, fit.summary{ 4, 1, 3, 2 }.median)
    local lines, out = collect()
    local res = demo.report(synthetic(), {}, out)
    -- shape m, base: ptx_ns = 1000 + 50 * 1000 in all five records
    assert.equal(51000, res.summaries.m.base.med.ptx_ns)
    assert.equal(3003, res.summaries.m.base.med.modkey_ns)
    assert.equal("1,234,567", demo.thousands(1234567))
    assert.equal("999", demo.thousands(999))
    assert.equal("-1,000", demo.thousands(-1000))
  end)

  describe("a live run on the CPU double", function()
    local saved = require("helpers.probe").saved()
    setup(saved.save)
    teardown(saved.restore)

    it("writes the header, every record and the checks to the log, with a progress line", function()
      local path = os.tmpname()
      local progress = {}
      local err = { write = function(_, ...) for _, s in ipairs{ ... } do progress[#progress + 1] = s end end,
                    flush = function() end }
      local lines, out = collect()
      local shapes = {
        { name = "tiny", nodes = 30, barriers = 0, n = 512, block = 128, fixpoint = 1, per_round = 2, seed = 1 },
        { name = "wide", nodes = 300, barriers = 2, n = 512, block = 128, fixpoint = 2, per_round = 3, seed = 2 },
      }
      local code = demo.live(cpu_device.new(), { log = path, rounds = 2, shapes = shapes, verify = false,
        why_unverified = "the CPU test double runs no kernels" }, out, err)
      assert.equal(0, code)
      local log = assert(demo.load_log(path))
      os.remove(path)
      -- 2 rounds x (2 + 3) dispatches x 3 knob sets
      assert.equal(30, #log.records)
      assert.equal("cpu-double", log.meta.kind)
      assert.same({ outputs = "unchecked", audit = "18/18", sums = "30/30" }, log.checks)
      local knobs = {}
      for _, r in ipairs(log.records) do knobs[r.knob] = (knobs[r.knob] or 0) + 1 end
      assert.same({ base = 10, memo_digest = 10, ["memo_digest+cache_scan+skip_gate"] = 10 }, knobs)
      local text = table.concat(progress)
      assert.truthy(text:find("\r", 1, true))
      assert.truthy(text:find("phaseprobe demo: wide/base 15/30 dispatches", 1, true) or
        text:find("phaseprobe demo: wide/", 1, true))
      assert.truthy(find_line(lines, "outputs: not checked (the CPU test double runs no kernels)", true))
      assert.truthy(find_line(lines, "^  arrival audit equals markers x blocks in 18 of 18 barrier dispatches$"))
    end)

    it("checks outputs against the CPU evaluation and fails when they differ", function()
      -- the double reads back zeros for outputs: a verified run must fail
      local lines, out = collect()
      local shapes = { { name = "tiny", nodes = 30, barriers = 0, n = 64, block = 64, fixpoint = 1,
                         per_round = 1, seed = 1 } }
      local code = demo.live(cpu_device.new(), { rounds = 1, shapes = shapes, knob_sets = { {} } }, out, false)
      assert.equal(1, code)
      assert.truthy(find_line(lines, "^  outputs match the CPU evaluation in 0 of 1 dispatches"))
      assert.truthy(find_line(lines, "^  FAILED: tiny/base seq 1: buffer '"))
    end)
  end)
end)
