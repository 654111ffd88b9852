--- phaseprobe report: the summary of a log of record lines.
local cli = require "phaseprobe.cli"
local analyze = require "phaseprobe.analysis.analyze"
local report = require "phaseprobe.output.report"

local C = cli.reader("time per phase, scaling verdicts, starvation, residue and probe overhead", [[
usage: phaseprobe report [options] FILE...

Summarises record lines: each phase's time per dispatch (count, min, median,
mean, p90, p99, max, total) with its share of wall time, nested regions, the
scaling verdict of every phase, host starvation (device_window_ns - kernel_ns),
the unattributed residue and the probe's own overhead.

options:
  --group F        a section per value of field or tag F (or @file)
  --fields A,B     summarise these fields instead of the phases
  --records N      also list the first N records (per-dispatch view)
]])

local function section(ctx, title)
  ctx.write("\n== ", title, "\n")
end

-- progress: the steps' progress lines (ctx.progress, or one whose lines
-- name the group)
local function body(ctx, set, opts, nrec, progress)
  local aopts = { progress = progress }
  if opts.fields then
    local items = {}
    local names = cli.split_list(opts.fields)
    local step = analyze.step(aopts, "summarising the fields", #names, "fields")
    for _, f in ipairs(names) do
      step:begin(f)
      items[#items + 1] = { name = f, summary = set:summary(f) }
    end
    step:finish()
    section(ctx, "fields")
    ctx.write(report.summaries(items, { fmt = function(v, row)
      return row.name:match("_ns$") and report.ns(v) or report.num(v)
    end }), "\n")
  else
    section(ctx, "time per dispatch, by phase")
    ctx.write(report.phases(analyze.phases(set, nil, aopts)), "\n")
  end
  section(ctx, "scaling (Theil-Sen verdicts; least squares beside)")
  ctx.write(report.scaling(analyze.scaling(set, aopts)), "\n")
  section(ctx, "host starvation, unattributed residue, probe overhead")
  ctx.write(report.starvation(analyze.starvation(set, aopts)), "\n")
  local over = report.overrun(analyze.overrun(set, nil, aopts))
  if over then ctx.write(over, "\n") end
  if nrec then
    local n = nrec
    local fields = opts.fields and cli.split_list(opts.fields) or nil
    section(ctx, "records")
    ctx.write(set:view(fields, math.floor(n)), "\n")
  end
end

function C.run(args, ctx)
  local opts, files = ctx.options(args, {
    ["--group"] = "value", ["--fields"] = "value", ["--records"] = "value",
    short = { ["-g"] = "--group" } })
  local nrec = opts.records and cli.number(opts.records, "--records", 1)
  local set, rep = ctx.read(files)
  -- every option is checked against the records before anything is written
  if opts.group and not set:has(opts.group) then
    ctx.usage(string.format("--group %s: no field '%s' in the records (%s)", opts.group, opts.group,
      report.field_choices(set)))
  end
  -- (a tag's text has no summary)
  for _, f in ipairs(opts.fields and cli.split_list(opts.fields) or {}) do
    cli.need_field(set, "--fields", f, "number")
  end
  ctx.write(report.parse(rep, { limit = 0 }):gsub("\n.*", ""), "\n")
  local pre = {}
  for _, p in ipairs(set:prefixes()) do
    pre[#pre + 1] = string.format("%s (%s)", p.prefix, report.num(p.n))
  end
  ctx.write("records: ", report.num(set:count()), " [", table.concat(pre, ", "), "]\n")
  local mixed = report.variants(analyze.variants(set, { progress = ctx.progress }))
  if mixed then ctx.write(mixed, "\n") end
  if opts.group then
    local groups = set:group(opts.group)
    section(ctx, "groups by " .. opts.group)
    ctx.write(tostring(groups):gsub("^[^\n]*\n", ""), "\n")
    for _, g in ipairs(groups) do
      local name = opts.group .. "=" .. (g.missing and "(none)" or tostring(g.key))
      ctx.write("\n#### ", name, ": ", report.count(g.n, "record"), "\n")
      body(ctx, g.set, opts, nrec, function(what, popts)
        return ctx.progress(name .. ": " .. what, popts)
      end)
    end
  else
    body(ctx, set, opts, nrec, ctx.progress)
  end
  return 0
end

return C
