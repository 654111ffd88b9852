-- phaseprobe.dispatch.demo: the nine-phase decomposition of real dispatches.
--
--   require("phaseprobe.dispatch.demo").main{ "--log", "demo.log" }   -> exit code
--
-- On a GPU it dispatches three generated programs that mirror the
-- reference's investigation (a small program with few dispatches per round,
-- a large one with grid barriers and more, one in between), under three knob
-- sets (base; memo_digest; memo_digest+cache_scan+skip_gate), checks every
-- output against the CPU evaluation and every barrier dispatch's arrival
-- audit, and prints per shape the phase decomposition and what grows with
-- program size. Without a GPU it says so in one line and prints the same
-- report from a record log recorded on the GPU machine (examples/data/ in
-- the checkout, phaseprobe/data/ beside these modules when installed).
--
-- Options:
--   --log PATH      write every record line (and the run's header and
--                   checks) to PATH
--   --rounds N      rounds per shape and knob set (default 30)
--   --replay PATH   only print the report of a recorded log
--   --data PATH     the recorded log to fall back to without a GPU
--   -h, --help
--
-- Where it sits: it drives phaseprobe.dispatch (the dispatcher) over
-- phaseprobe.dispatch.program's generated programs; the records it gets
-- back (or reads from a log) become one record set, and every figure it
-- prints is a C summary of that set (set:summary) or a verdict of
-- phaseprobe.analysis.fit, the same verdict the reports give.
local pp = require "phaseprobe"
local P = require "phaseprobe.dispatch.program"
local D = require "phaseprobe.dispatch"
local fit = require "phaseprobe.analysis.fit"
local records = require "phaseprobe.records"

local M = {}
local fmt = string.format

M.VERSION = 1
M.SHAPES = {
  { name = "small", nodes = 48, barriers = 0, n = 4096, block = 256, fixpoint = 1, per_round = 4, seed = 11 },
  { name = "mid", nodes = 2500, barriers = 2, n = 2048, block = 256, fixpoint = 2, per_round = 5, seed = 12 },
  { name = "large", nodes = 10000, barriers = 6, n = 2048, block = 256, fixpoint = 3, per_round = 6, seed = 13 },
}
M.KNOB_SETS = {
  {},
  { memo_digest = true },
  { memo_digest = true, cache_scan = true, skip_gate = true },
}
M.DEFAULT_ROUNDS = 30
M.DATA_FILE = "examples/data/demo-h200.log"
M.HEADER = "# phaseprobe-demo"
M.CHECKS = "# phaseprobe-demo-checks"

local PHASE_FIELDS = {}
for i, name in ipairs(D.PHASES) do PHASE_FIELDS[i] = name .. "_ns" end

-- ---- formatting ------------------------------------------------------------------
-- The one number style (phaseprobe.output.report): times in SI units with 3
-- significant digits, counts with thousands separators, lines within
-- report.width columns.
local report = require "phaseprobe.output.report"

local function thousands(x)
  return report.num(math.floor(x + 0.5))
end
M.thousands = thousands

local function pct(x)
  local s = report.pct(x)
  return string.rep(" ", 6 - #s) .. s
end

local function kb(bytes)
  return report.plain(bytes / 1000) .. " KB"
end

local ns = report.ns

-- A line of text wrapped at the report's width, later lines under `indent`.
local function say(out, text, first, indent)
  for _, l in ipairs(report.wrap(text, report.width, indent or ((first or "") .. "  "), first or "")) do
    out(l)
  end
end

-- "a/b" as recorded in a log's checks line, as "a of b" with separators.
local function of_text(s)
  local a, b = tostring(s):match("^(%d+)/(%d+)$")
  if not a then return tostring(s) end
  return thousands(tonumber(a)) .. " of " .. thousands(tonumber(b))
end

-- ---- record logs -------------------------------------------------------------------
local function parse_kv(s)
  local t = {}
  for k, q, v in s:gmatch('([%w_]+)=("?)([^"%s]*)') do
    if q == '"' then
      v = s:match(k .. '="([^"]*)"') or v
    end
    t[k] = v
  end
  return t
end
M.parse_kv = parse_kv

--- demo.load_log(path) -> {meta=, checks=, records=, path=} | nil, message.
--- records is a record set of the log's record lines (read by pp.parse);
--- lines "# phaseprobe-demo ..." and "# phaseprobe-demo-checks ..." carry
--- the run's device, date and checks. Any other line that is not a record
--- with a wall_ns refuses the log, naming file and line.
function M.load_log(path)
  require("phaseprobe.output.files").check_path(path, "demo.load_log", "log", 2)
  local f, err = io.open(path, "r")
  if not f then return nil, err end
  local log = { meta = {}, checks = nil, path = path }
  local lines, lineno, candidates = f:lines(), 0, {}
  local set, rep = records.from_lines(function()
    local line = lines()
    if line == nil then return nil end
    lineno = lineno + 1
    if line:sub(1, #M.CHECKS + 1) == M.CHECKS .. " " then
      log.checks = parse_kv(line:sub(#M.CHECKS + 2))
    elseif line:sub(1, #M.HEADER + 1) == M.HEADER .. " " then
      log.meta = parse_kv(line:sub(#M.HEADER + 2))
    elseif line ~= "" and line:sub(1, 1) ~= "#" then
      candidates[#candidates + 1] = lineno
    end
    return line
  end, { source = path })
  f:close()
  if rep.rejected > 0 then
    local e = rep.errors[1]
    return nil, fmt("%s:%d: %s", path, e.line, e.what)
  end
  -- every candidate line must be a record, and every record has a wall_ns
  local is_record = {}
  for i = 1, set:count() do
    local r = set:record(i)
    if r.wall_ns ~= nil then is_record[set:columns():get(set:row(i), "@line")] = true end
  end
  for _, l in ipairs(candidates) do
    if not is_record[l] then
      return nil, fmt("%s:%d: not a record line (no wall_ns)", path, l)
    end
  end
  if set:count() == 0 then
    return nil, path .. ": no record lines"
  end
  log.records = set
  return log
end

-- ---- the report ----------------------------------------------------------------------
-- The records of one knob set ("base": records tagged base or not tagged).
local function knob_set(set, knob)
  if knob == "base" then return set:where { knob = { "base", false } } end
  return set:where { knob = knob }
end

local function key_of(g, missing)
  if g.missing then return missing end
  return tostring(g.key)
end

-- shapes (by program size) and knob sets (base first), each a record set
local function group(set)
  local by, shapes, knobs, seen_knob = {}, {}, {}, {}
  for _, g in ipairs(set:has("shape") and set:group("shape") or { { missing = true, set = set } }) do
    local s = key_of(g, "?")
    shapes[#shapes + 1] = s
    by[s] = {}
    for _, k in ipairs(g.set:has("knob") and g.set:group("knob") or { { missing = true, set = g.set } }) do
      local name = key_of(k, "base")
      by[s][name] = k.set
      if not seen_knob[name] then
        seen_knob[name] = true
        knobs[#knobs + 1] = name
      end
    end
  end
  local function nodes_of(s)
    local _, sub = next(by[s])
    return sub:record(1).nodes or 0
  end
  table.sort(shapes, function(a, b) return nodes_of(a) < nodes_of(b) end)
  table.sort(knobs, function(a, b)
    if a == "base" then return b ~= "base" end
    if b == "base" then return false end
    return #a < #b or (#a == #b and a < b)
  end)
  return by, shapes, knobs
end

local SUMMARISED = { "wall_ns", "named_host_ns", "unattributed_ns", "enqueue_ns", "wait_ns", "device_window_ns",
  "kernel_ns", "sub_ptx_digest_ns", "sub_ptx_vsa_ns" }
for _, f in ipairs(PHASE_FIELDS) do SUMMARISED[#SUMMARISED + 1] = f end

-- device_window_ns - kernel_ns per dispatch, at least 0 (the C summary)
local function starvation(set)
  if not (set:has("device_window_ns") and set:has("kernel_ns")) then return fit.summary({}) end
  return set:lincomb({ { "device_window_ns", 1 }, { "kernel_ns", -1 } }, 0)
end

local function shape_summary(set)
  local s = { count = set:count(), med = {}, total = {} }
  local r1 = set:record(1)
  for _, k in ipairs{ "nodes", "ptx_bytes", "grid_blocks", "fixpoint", "buffers", "bindings" } do
    s[k] = r1[k] or 0
  end
  for _, f in ipairs(SUMMARISED) do
    local sm = set:has(f) and set:summary(f) or { count = 0 }
    s.med[f] = sm.count > 0 and sm.median or 0
    s.total[f] = sm.count > 0 and sm.sum or 0
  end
  local st = starvation(set)
  s.med.starvation_ns = st.count > 0 and st.median or 0
  -- CUPTI's timeline: the device's idle time in the window, split
  if r1.kernel_src == "cupti" then
    for _, f in ipairs{ "launch_latency_ns", "host_gap_ns", "kernels" } do
      local sm = set:has(f) and set:summary(f) or { count = 0 }
      s.med[f] = sm.count > 0 and sm.median or 0
    end
  end
  return s
end

local function rpad(s, n) return s .. string.rep(" ", n - #s) end
local function lpad(s, n) return string.rep(" ", n - #s) .. s end

local function report_shape(out, name, s, per_round)
  local count = report.count
  say(out, fmt("shape %s: %s, %s PTX, %s, fixpoint %s, %s; %s%s", name,
    count(math.floor(s.nodes + 0.5), "node"), kb(s.ptx_bytes),
    count(math.floor(s.grid_blocks + 0.5), "grid block"), thousands(s.fixpoint),
    count(math.floor(s.buffers + 0.5), "buffer"), count(s.count, "dispatch"),
    per_round and fmt(", %s per round", thousands(per_round)) or ""))
  out("  phase               median   share of wall (totals)")
  local wall_total = s.total.wall_ns > 0 and s.total.wall_ns or 1
  local function row(label, v, share)
    out(fmt("  %s %10s   %s", rpad(label, 14), ns(v), share))
  end
  for i, name_ in ipairs(D.PHASES) do
    local f = PHASE_FIELDS[i]
    row(name_, s.med[f], pct(s.total[f] / wall_total))
  end
  row("named host", s.med.named_host_ns, pct(s.total.named_host_ns / wall_total))
  row("residue", s.med.unattributed_ns, pct(s.total.unattributed_ns / wall_total))
  row("wall", s.med.wall_ns, pct(1))
  say(out, fmt("inside ptx: sub_ptx_digest %s, sub_ptx_vsa %s", ns(s.med.sub_ptx_digest_ns),
    ns(s.med.sub_ptx_vsa_ns)), "  ")
  say(out, fmt("enqueue %s, wait %s; device window %s, kernel %s, starvation (window - kernel) %s",
    ns(s.med.enqueue_ns), ns(s.med.wait_ns), ns(s.med.device_window_ns), ns(s.med.kernel_ns),
    ns(s.med.starvation_ns)), "  ")
  if s.med.launch_latency_ns then
    say(out, fmt("device timeline (CUPTI, probe clock): %s; idle in the window: launch "
      .. "latency %s, host gap %s", report.count(math.floor(s.med.kernels + 0.5), "kernel"),
      ns(s.med.launch_latency_ns),
      ns(s.med.host_gap_ns)), "  ")
  end
  if per_round then
    say(out, fmt("per round of %s: wall %s", report.count(per_round, "dispatch"),
      ns(per_round * s.med.wall_ns)), "  ")
  end
end

-- The verdict of field f of a set against nodes (phaseprobe.analysis.fit,
-- over every dispatch), and its Theil-Sen slope in ns per node.
local function verdict(set, f)
  local v
  if f == "starvation_ns" then
    local xs, ys = {}, {}
    for i = 1, set:count() do
      local r = set:record(i)
      xs[i] = r.nodes or 0
      local w, k = r.device_window_ns or 0, r.kernel_ns or 0
      ys[i] = w > k and w - k or 0
    end
    v = fit.decide(f, fit.summary(ys), { nodes = fit.line(xs, ys) }, { "nodes" })
  elseif set:has(f) and set:has("nodes") then
    v = fit.verdict(set, f, { "nodes" })
  else
    return { verdict = "inconclusive", reason = "no " .. f }, 0
  end
  local fn = v.fits and v.fits.nodes
  return v, fn and fn.ok and fn.ts.slope or 0
end

local function slope_of(set, f)
  local _, sl = verdict(set, f)
  return sl
end

--- demo.report(set, opts, out) prints the report of a record set (a list of
--- records is made one); returns a table of the figures it printed (for
--- specs): summaries[shape][knob], slopes, verdicts.
function M.report(set, opts, out)
  opts = opts or {}
  if not records.is_set(set) then set = records.from_list(set) end
  local by, shapes, knobs = group(set)
  local result = { summaries = {}, slopes = {}, verdicts = {}, shapes = shapes, knobs = knobs }
  local per_round = {}
  for _, sh in ipairs(M.SHAPES) do per_round[sh.name] = sh.per_round end
  for _, name in ipairs(shapes) do
    result.summaries[name] = {}
    for _, k in ipairs(knobs) do
      if by[name][k] then result.summaries[name][k] = shape_summary(by[name][k]) end
    end
  end
  local base = knobs[1]
  for _, name in ipairs(shapes) do
    local s = result.summaries[name][base]
    if s then
      out("")
      report_shape(out, name, s, opts.per_round ~= false and per_round[name] or nil)
    end
  end
  -- what grows with program size
  local xs = {}
  local usable = {}
  for _, name in ipairs(shapes) do
    local s = result.summaries[name][base]
    if s then
      xs[#xs + 1] = s.nodes
      usable[#usable + 1] = name
    end
  end
  if #usable >= 2 then
    local base_set = knob_set(set, base)
    out("")
    say(out, fmt("what grows with program size (knobs %s; median per dispatch; slope and verdict: "
      .. "Theil-Sen over every dispatch against nodes, as phaseprobe fit gives them)", base))
    local head = "  " .. rpad("", 16)
    for _, name in ipairs(usable) do head = head .. lpad(name, 12) end
    out(head .. lpad("per node", 11) .. "  verdict")
    local nodes_line = "  " .. rpad("nodes", 16)
    for _, x in ipairs(xs) do nodes_line = nodes_line .. lpad(thousands(x), 12) end
    out(nodes_line)
    local rows = {}
    for _, f in ipairs(PHASE_FIELDS) do rows[#rows + 1] = f end
    for _, f in ipairs{ "sub_ptx_digest_ns", "sub_ptx_vsa_ns", "unattributed_ns", "wall_ns", "kernel_ns",
      "starvation_ns" } do rows[#rows + 1] = f end
    local growing = {}
    for _, f in ipairs(rows) do
      local line = "  " .. rpad(f, 16)
      for _, name in ipairs(usable) do
        line = line .. lpad(ns(result.summaries[name][base].med[f]), 12)
      end
      local v, sl = verdict(base_set, f)
      result.slopes[f] = sl
      result.verdicts[f] = v.verdict
      if v.quantity == "nodes" and f ~= "wall_ns" then growing[#growing + 1] = f end
      out(line .. lpad(ns(sl), 11) .. "  " .. v.verdict)
    end
    say(out, "-> grows with program size: " .. (#growing > 0 and table.concat(growing, ", ")
      or "nothing"), "  ", "     ")
    -- the knob sets against each other
    if #knobs > 1 then
      out("")
      local w = 16
      for _, k in ipairs(knobs) do w = math.max(w, #k + 4) end
      local khead = "  " .. rpad("knob sets (median)", w)
      for _, name in ipairs(usable) do khead = khead .. lpad(name, 12) end
      out(khead .. lpad("per node", 11))
      result.knob_slopes = {}
      for _, f in ipairs{ "ptx_ns", "sub_ptx_digest_ns", "sub_ptx_vsa_ns", "lease_ns", "wall_ns" } do
        out("  " .. f)
        for _, k in ipairs(knobs) do
          local line = "    " .. rpad(k, w - 2)
          local complete = true
          for _, name in ipairs(usable) do
            local s = result.summaries[name][k]
            if s then
              line = line .. lpad(ns(s.med[f]), 12)
            else
              complete = false
              line = line .. lpad("-", 12)
            end
          end
          local sl = complete and slope_of(knob_set(set, k), f) or 0
          result.knob_slopes[k .. ":" .. f] = sl
          out(line .. lpad(complete and ns(sl) or "-", 11))
        end
      end
      if result.summaries[usable[1]].memo_digest then
        local b = result.knob_slopes[base .. ":ptx_ns"]
        local m = result.knob_slopes["memo_digest:ptx_ns"]
        local base_grows = (verdict(base_set, "ptx_ns")).quantity == "nodes"
        local stops = base_grows and m <= 0.05 * b
        local first, last = result.summaries[usable[1]].memo_digest, result.summaries[usable[#usable]].memo_digest
        result.memo = { base_slope = b, memo_slope = m, base_grows = base_grows, stops = stops }
        say(out, fmt("-> ptx phase: %s per node with the digest walked per dispatch, %s per node "
          .. "with it memoised (%s of the per-node cost gone)", ns(b), ns(m),
          report.pct(b > 0 and (1 - m / b) or 0)), "  ", "     ")
        if stops then
          say(out, fmt("with the digest memoised the ptx phase stops growing with program size; "
            .. "what is left is sub_ptx_vsa (%s to %s), a walk over the access summary, not over "
            .. "the nodes", ns(first and first.med.sub_ptx_vsa_ns or 0),
            ns(last and last.med.sub_ptx_vsa_ns or 0)), "     ", "     ")
        elseif not base_grows then
          out("     the ptx phase did not grow with program size in this run to begin with")
        else
          out("     the ptx phase still grows with program size with the digest memoised")
        end
      end
    end
  end
  return result
end

-- ---- checks ------------------------------------------------------------------------------
local function new_checks()
  return { outputs_ok = 0, outputs_n = 0, audit_ok = 0, audit_n = 0, sums_ok = 0, sums_n = 0,
           verified = true, failures = {} }
end

local function check_sums(c, rec)
  c.sums_n = c.sums_n + 1
  if rec.named_host_ns + rec.unattributed_ns == rec.wall_ns then
    c.sums_ok = c.sums_ok + 1
  elseif #c.failures < 5 then
    c.failures[#c.failures + 1] = fmt("seq %d: named_host_ns %d + unattributed_ns %d ~= wall_ns %d",
      rec.seq, rec.named_host_ns, rec.unattributed_ns, rec.wall_ns)
  end
end

local function checks_line(c)
  local outputs = c.verified and fmt("%d/%d", c.outputs_ok, c.outputs_n) or "unchecked"
  return fmt("outputs=%s audit=%d/%d sums=%d/%d", outputs, c.audit_ok, c.audit_n, c.sums_ok, c.sums_n)
end

local function print_checks(out, c, recorded)
  out("")
  out(recorded and "checks (as recorded):" or "checks:")
  if c.outputs == "unchecked" or c.verified == false then
    out("  outputs: not checked (" .. (c.why or "this run dispatched no kernels") .. ")")
  else
    out(fmt("  outputs match the CPU evaluation in %s dispatches (every shape and knob set)",
      of_text(c.outputs or fmt("%d/%d", c.outputs_ok, c.outputs_n))))
  end
  out(fmt("  arrival audit equals markers x blocks in %s barrier dispatches",
    of_text(c.audit or fmt("%d/%d", c.audit_ok, c.audit_n))))
  out(fmt("  named_host_ns + unattributed_ns == wall_ns in %s records",
    of_text(c.sums or fmt("%d/%d", c.sums_ok, c.sums_n))))
  for _, f in ipairs(c.failures or {}) do say(out, "FAILED: " .. f, "  ") end
end

local function frac_ok(s)
  if s == nil or s == "unchecked" then return true end
  local a, b = tostring(s):match("^(%d+)/(%d+)$")
  return a ~= nil and a == b
end

-- ---- a run --------------------------------------------------------------------------------
-- one status line on stderr, rewritten in place with \r
local progress_len = 0
local function progress(err, text)
  if not err then return end
  local pad = progress_len > #text and string.rep(" ", progress_len - #text) or ""
  err:write("\r", text, pad)
  err:flush()
  progress_len = #text
end
local function progress_clear(err)
  if err and progress_len > 0 then
    err:write("\r", string.rep(" ", progress_len), "\r")
    err:flush()
  end
  progress_len = 0
end

--- demo.run{device=, rounds=, shapes=, knob_sets=, verify=true, log=, err=}
--- -> records, checks. Dispatches every shape under every knob set.
function M.run(o)
  local dev = assert(o.device, "demo.run: device")
  local rounds = o.rounds or M.DEFAULT_ROUNDS
  local shapes = o.shapes or M.SHAPES
  local knob_sets = o.knob_sets or M.KNOB_SETS
  local verify = o.verify ~= false
  local err = o.err
  local checks = new_checks()
  checks.verified = verify
  checks.why = o.why_unverified
  local d = D.new{ device = dev }
  -- short collector pauses: a pause inside a dispatch lands in some phase
  local gc_mode = collectgarbage("generational")
  local records = {}
  -- with CUPTI's timeline a record is completed after its emit: the run's
  -- records are read back from the store, complete, at the end
  local timeline = dev.ctx and dev.ctx.kernel_source and dev.ctx:kernel_source() == "cupti"
  local stored0 = pp.store.count()
  local total = 0
  for _, sh in ipairs(shapes) do total = total + rounds * sh.per_round * #knob_sets end
  local done = 0
  local last_progress = 0
  for _, sh in ipairs(shapes) do
    local prog = P.generate{ nodes = sh.nodes, barriers = sh.barriers, seed = sh.seed, name = sh.name,
                             fixpoint = sh.fixpoint }
    local inputs = P.inputs(prog, sh.n, sh.seed)
    local want
    if verify then
      progress(err, fmt("phaseprobe demo: %s: CPU evaluation of %s x %s x %s", sh.name,
        report.count(prog.nodes, "node"), report.count(sh.n, "element"),
        report.count(sh.fixpoint, "iteration")))
      want = prog:evaluate(inputs, sh.n, sh.fixpoint)
    end
    for _, knobs in ipairs(knob_sets) do
      d:set_knobs(knobs)
      collectgarbage()
      for _ = 1, rounds * sh.per_round do
        local res = d:dispatch(prog, { n = sh.n, inputs = inputs, block = sh.block, shape = sh.name })
        local rec = res.record
        if rec and not timeline then
          records[#records + 1] = rec
          check_sums(checks, rec)
        end
        if verify then
          checks.outputs_n = checks.outputs_n + 1
          local ok, why = P.compare(prog, res.outputs, want)
          if ok then
            checks.outputs_ok = checks.outputs_ok + 1
          elseif #checks.failures < 5 then
            checks.failures[#checks.failures + 1] = fmt("%s/%s seq %d: %s", sh.name, d:knob_label(), res.seq, why)
          end
        end
        if res.cooperative then
          checks.audit_n = checks.audit_n + 1
          if res.arrivals == res.ceiling and res.markers == prog.barriers then
            checks.audit_ok = checks.audit_ok + 1
          elseif #checks.failures < 5 then
            checks.failures[#checks.failures + 1] = fmt("%s seq %d: %s, ceiling %s x %s",
              sh.name, res.seq, report.count(res.arrivals, "arrival"),
              res.markers and report.count(res.markers, "marker") or "? markers",
              report.count(res.grid, "block"))
          end
        end
        done = done + 1
        local now = pp.now()
        if err and (now - last_progress > 100000000 or done == total) then
          last_progress = now
          progress(err, fmt("phaseprobe demo: %s/%s %s of %s", sh.name, d:knob_label(),
            thousands(done), report.count(total, "dispatch")))
        end
      end
    end
  end
  progress_clear(err)
  if timeline then
    pp.flush(5000)
    for i = stored0 + 1, pp.store.count() do
      local rec = pp.store.get(i)
      records[#records + 1] = rec
      check_sums(checks, rec)
    end
  end
  d:close()
  collectgarbage(gc_mode)
  return records, checks
end

-- ---- main --------------------------------------------------------------------------------------
local function usage(out)
  out("usage: phaseprobe demo [--log PATH] [--rounds N] [--events] [--replay PATH] [--data PATH]")
  out("                      [--verbose]")
  out("  On a GPU: dispatches three program shapes under three knob sets and reports the phase")
  out("  decomposition, kernel times from CUPTI's timeline where CUPTI runs (--events: the event")
  out("  pairs). Without one: reports a log recorded on the GPU machine (--verbose: why no GPU).")
end

--- demo.parse_args(args) -> options; raises "phaseprobe demo: ..." for an
-- argument it does not take (a usage error).
local function parse_args(args)
  local o = {}
  local i = 1
  while i <= #args do
    local a = args[i]
    local function value()
      i = i + 1
      if args[i] == nil then error("phaseprobe demo: " .. a .. " needs a value", 0) end
      return args[i]
    end
    if a == "--log" then
      o.log = value()
    elseif a == "--rounds" then
      o.rounds = math.tointeger(tonumber(value()))
      if not o.rounds or o.rounds < 1 then error("phaseprobe demo: --rounds needs a positive integer", 0) end
    elseif a == "--replay" then
      o.replay = value()
    elseif a == "--data" then
      o.data = value()
    elseif a == "--events" then
      o.events = true
    elseif a == "--verbose" or a == "-v" then
      o.verbose = true
    elseif a == "-h" or a == "--help" then
      o.help = true
    else
      error("phaseprobe demo: unknown argument '" .. tostring(a) .. "' (see --help)", 0)
    end
    i = i + 1
  end
  return o
end
M.parse_args = parse_args

-- The recorded log: installed beside the modules (phaseprobe/data/, where
-- `make install` and the rock put it), else in the checkout's examples/data/.
local function default_data()
  local here = package.searchpath("phaseprobe.dispatch.demo", package.path)
  if here then
    local dir = here:gsub("[^/]*$", "")
    local root = dir:gsub("lua/phaseprobe/dispatch/$", "")
    for _, p in ipairs { dir:gsub("dispatch/$", "data/") .. M.DATA_FILE:match("[^/]*$"),
                         (root ~= "" and root or "./") .. M.DATA_FILE } do
      local f = io.open(p, "r")
      if f then
        f:close()
        return p
      end
    end
  end
  return M.DATA_FILE
end

--- demo.replay(path, out [, fail]) -> exit code: the report of a recorded
-- log (fail(line): where an error goes, default out).
function M.replay(path, out, fail)
  local log, err = M.load_log(path)
  if not log then
    for _, l in ipairs(report.wrap("phaseprobe demo: cannot read the recorded log: " .. tostring(err),
      report.width, "  ", "")) do (fail or out)(l) end
    return 1
  end
  local m = log.meta
  say(out, fmt("recorded on %s (%s, sm %s, %s SMs) on %s, %s rounds",
    m.device or "an unknown device", m.kind or "?", m.cc or "?", m.sm_count or "?",
    m.recorded or "an unknown date", m.rounds or "?"))
  say(out, "log " .. path, "  ")
  if m.kind and m.kind ~= "cuda" then
    say(out, "NOTE: this log was not recorded on a GPU: its device times are host clock readings "
      .. "and its outputs were not checked")
  end
  M.report(log.records, {}, out)
  local c = new_checks()
  for i = 1, log.records:count() do check_sums(c, log.records:record(i)) end
  local recorded = log.checks or {}
  print_checks(out, {
    outputs = recorded.outputs or "unchecked",
    verified = recorded.outputs ~= nil and recorded.outputs ~= "unchecked",
    why = recorded.outputs == nil and "the log carries no checks line" or "the log's device ran no kernels",
    audit = recorded.audit or "not recorded",
    sums = fmt("%d/%d", c.sums_ok, c.sums_n),
    failures = c.failures,
  }, true)
  return c.sums_ok == c.sums_n and 0 or 1
end

local function write_header(path, dev, rounds)
  local f, err = io.open(path, "w")
  if not f then error("phaseprobe demo: cannot write the log '" .. path .. "': " .. tostring(err), 0) end
  f:write(fmt('%s version=%d recorded="%s" device="%s" kind=%s cc=%d.%d sm_count=%d rounds=%d\n', M.HEADER,
    M.VERSION, os.date("!%Y-%m-%d %H:%M:%S UTC"), tostring(dev.name):gsub('"', "'"), dev.kind or "?",
    dev.cc_major or 0, dev.cc_minor or 0, dev.sm_count or 0, rounds))
  f:close()
end

local function append_checks(path, checks)
  local f = io.open(path, "a")
  if f then
    f:write(M.CHECKS, " ", checks_line(checks), "\n")
    f:close()
  end
end

--- demo.live(dev, o, out, err) -> exit code: run, report, check.
function M.live(dev, o, out, err)
  local rounds = o.rounds or M.DEFAULT_ROUNDS
  local clock0 = pp.now()
  pp.enable()
  pp.use(pp.default_schema())
  -- kernel times from CUPTI's timeline, on the probe clock, when CUPTI runs
  -- here (--events keeps the reference's event pairs)
  local source = "event"
  if not o.events and dev.ctx and dev.ctx.kernel_source then
    source = dev.ctx:kernel_source("cupti") or dev.ctx:kernel_source("event")
  end
  if o.log then
    write_header(o.log, dev, rounds)
    local ok, msg = pp.sink(o.log)
    if not ok then error("phaseprobe demo: " .. msg, 0) end
  else
    pp.sink("none")
  end
  say(out, fmt("phaseprobe demo on %s (%s, sm_%d%d, %s): %s x %s x %s; kernel times: %s",
    tostring(dev.name), dev.kind or "?", dev.cc_major or 0, dev.cc_minor or 0,
    report.count(dev.sm_count or 0, "SM"), report.count(#(o.shapes or M.SHAPES), "shape"),
    report.count(#(o.knob_sets or M.KNOB_SETS), "knob set"), report.count(rounds, "round"),
    source == "cupti" and "CUPTI's timeline" or "the event pairs"))
  local list, checks = M.run{ device = dev, rounds = rounds, verify = o.verify, err = err,
    shapes = o.shapes, knob_sets = o.knob_sets, why_unverified = o.why_unverified }
  if o.log then
    pp.sink("none")
    append_checks(o.log, checks)
  end
  M.report(records.from_list(list), {}, out)
  print_checks(out, checks, false)
  local seconds = (pp.now() - clock0) / 1e9
  say(out, fmt("demo took %s%s", ns(seconds * 1e9), o.log and ("; records in " .. o.log) or ""))
  local ok = frac_ok(checks_line(checks):match("outputs=(%S+)")) and checks.audit_ok == checks.audit_n
    and checks.sums_ok == checks.sums_n
  return ok and 0 or 1
end

--- demo.main(args [, out [, err [, fail]]]) -> exit code (2: an argument
-- it does not take). args: a list of strings; out(line): the report; err:
-- the stream of the progress line (false: none); fail(line): where errors
-- go (default: standard error).
function M.main(args, out, err, fail)
  args = args or {}
  out = out or function(line) io.stdout:write(line, "\n") end
  fail = fail or function(line) io.stderr:write(line, "\n") end
  if err == nil then err = io.stderr end
  -- the status line only on a terminal (one rule: phaseprobe.cli.progress)
  if err and not require("phaseprobe.cli.progress").enabled(err) then err = false end
  local ok, o = pcall(parse_args, args)
  if not ok then
    fail(tostring(o))
    return 2
  end
  if o.help then
    usage(out)
    return 0
  end
  if o.replay then
    return M.replay(o.replay, out, fail)
  end
  local dev, why = D.cuda_device(0)
  if not dev then
    local data = o.data or default_data()
    out("phaseprobe demo: no GPU here; the log recorded on the GPU machine follows"
      .. (o.verbose and "" or " (--verbose: why)"))
    -- (within 100 columns: a long reason goes on under its first words)
    if o.verbose then say(out, "why: " .. tostring(why), "  ") end
    return M.replay(data, out, fail)
  end
  local ran, code = xpcall(M.live, debug.traceback, dev, o, out, err)
  if not ran then
    progress_clear(err)
    fail("phaseprobe demo: the run failed: " .. tostring(code))
    return 1
  end
  return code
end

return M
