-- The trace's device side on the host's time axis: records timed by CUPTI's
-- timeline (kernel_src=cupti) draw their kernels at their true times. Each
-- kernel slice must start after its launch call began and end before its
-- dispatch's readback ended. Checked on generated records and on the demo
-- log recorded on an H200 (examples/data/demo-h200.log) when that log
-- carries CUPTI's timeline.
local pp = require "phaseprobe"
local records = require "phaseprobe.records"
local trace = require "phaseprobe.output.trace"
local check = require "helpers.trace_check"
local cjson = require("cjson").new()

local PHASES = { "prepare", "ptx", "modkey", "stage", "resolve", "lease", "launch", "release", "readback" }

-- One reference-format line with CUPTI's timeline: phases end to end from
-- the start, the launch call 1 us into the launch phase, the kernel 7 us
-- later, running into the release phase (the stream synchronize).
local function line(seq, start)
  local v = { seq = seq, nodes = 100, wall_ns = 200000, device_window_ns = 80000, kernel_ns = 50000,
    tid = 7, start_ns = start, probe_ns = 500, kernel_src = "cupti", kernels = 1,
    launch_latency_ns = 7000, host_gap_ns = 23000 }
  local durs = { prepare = 20000, ptx = 30000, modkey = 2000, stage = 20000, resolve = 3000,
    lease = 1000, launch = 10000, release = 60000, readback = 40000 }
  local at, named = 0, 0
  for _, p in ipairs(PHASES) do
    if p == "launch" then v.launch_at_ns = at + 1000 end
    v[p .. "_ns"] = durs[p]
    at = at + durs[p]
    named = named + durs[p]
  end
  v.named_host_ns, v.unattributed_ns = named, 200000 - named
  v.kernel_first_ns = v.launch_at_ns + 7000
  v.kernel_last_ns = v.kernel_first_ns + 50000
  local f = {}
  for _, name in ipairs(pp.default_schema().fields) do
    f[#f + 1] = name .. "=" .. tostring(v[name] or 0)
  end
  return "vyre-cuda-dispatch-phase " .. table.concat(f, " ")
end

-- For every dispatch of the trace: its kernels slice, its launch call and
-- its readback slice, matched by seq (kernels, launch) and by time (the
-- readback of the dispatch slice that holds the kernels' start).
local function device_check(text)
  local rep = check.check(text)
  assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
  local doc = cjson.decode(text)
  local events = doc.traceEvents or doc
  local launches, kernels, dispatches = {}, {}, {}
  for _, e in ipairs(events) do
    if e.name == "launch call" and e.ph == "i" then launches[e.args.seq] = e.ts end
    if e.name == "kernels" and e.ph == "X" then kernels[#kernels + 1] = e end
    if e.name == "dispatch" and e.ph == "X" then dispatches[#dispatches + 1] = e end
  end
  local readback = {}
  for _, e in ipairs(events) do
    if e.name == "readback" and e.ph == "X" then readback[#readback + 1] = e end
  end
  local function readback_of(ts)
    for _, dsl in ipairs(dispatches) do
      if ts >= dsl.ts and ts <= dsl.ts + dsl.dur then
        for _, r in ipairs(readback) do
          if r.pid == dsl.pid and r.tid == dsl.tid and r.ts >= dsl.ts and r.ts <= dsl.ts + dsl.dur then
            return r
          end
        end
      end
    end
  end
  local bad = {}
  for _, k in ipairs(kernels) do
    local l = launches[k.args.seq]
    local r = readback_of(k.ts)
    if not l then
      bad[#bad + 1] = ("seq %s: no launch call"):format(tostring(k.args.seq))
    elseif k.ts < l then
      bad[#bad + 1] = ("seq %s: kernels start at %.3f us, before the launch call at %.3f us"):format(
        tostring(k.args.seq), k.ts, l)
    end
    if not r then
      bad[#bad + 1] = ("seq %s: no readback slice around the kernels"):format(tostring(k.args.seq))
    elseif k.ts + k.dur > r.ts + r.dur + 0.0005 then
      bad[#bad + 1] = ("seq %s: kernels end at %.3f us, after the readback ended at %.3f us"):format(
        tostring(k.args.seq), k.ts + k.dur, r.ts + r.dur)
    end
  end
  return #kernels, bad
end

describe("the trace's device side on the host's time axis", function()
  it("draws CUPTI-timed kernels after their launch call and before their readback ended", function()
    local lines = {}
    for i = 1, 20 do lines[i] = line(i, 1000000000 + i * 300000) end
    local set = records.from_string(table.concat(lines, "\n") .. "\n")
    local text = trace.trace_text({ { name = "generated", set = set } })
    local n, bad = device_check(text)
    assert.are.equal(20, n)
    assert.are.same({}, bad)
    -- at their true time: the kernels slice starts kernel_first_ns after the dispatch's start
    local doc = cjson.decode(text)
    local first_dispatch, kernel1
    for _, e in ipairs(doc.traceEvents or doc) do
      if e.name == "dispatch" and not first_dispatch then first_dispatch = e end
      if e.name == "kernels" and e.args.seq == 1 then kernel1 = e end
    end
    assert.are.equal(50, kernel1.dur)
    -- the launch phase starts 76 us in, the launch call 1 us later, the kernel 7 us after it
    assert.are.equal(first_dispatch.ts + 84, kernel1.ts)
  end)

  it("the demo log recorded on an H200: every dispatch's kernels inside its launch and readback", function()
    local path = "examples/data/demo-h200.log"
    local set = records.read(path)
    local cupti = set:where("kernel_src", "cupti"):count()
    if cupti == 0 then
      pending(path .. " carries no CUPTI timeline (recorded with the event pairs)")
      return
    end
    local text = trace.trace_text({ { name = "demo", set = set } }, { all = true })
    local n, bad = device_check(text)
    assert.are.equal(cupti, n)
    assert.are.same({}, bad)
  end)
end)
