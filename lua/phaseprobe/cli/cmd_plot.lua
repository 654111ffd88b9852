--- phaseprobe plot: one SVG plot.
local cli = require "phaseprobe.cli"
local html = require "phaseprobe.output.html"
local record = require "phaseprobe.record"
local svg = require "phaseprobe.output.svg"
local report = require "phaseprobe.output.report"

local C = cli.reader("write one SVG plot (a phase against a quantity, or the stacked bars)", [[
usage: phaseprobe plot --phase PHASE [--by QUANTITY] [--group TAG] [-o OUT.svg] FILE...
       phaseprobe plot --bars [--group TAG] [-o OUT.svg] FILE...

With --phase, a scatter of that phase's time (or a nested region's) against
QUANTITY, one colour per group, with the fitted line and the verdict. With
--bars, the stacked bar per group of the phase partition, the residue and
the starvation. What the analysis warns about (a tag splitting the records
into variants that behave differently, records whose phases exceed their
wall) is said on stderr and in the plot.

  --phase PHASE       e.g. ptx_ns (or ptx), sub_ptx_digest_ns
  --by QUANTITY       the x axis (default: the quantity of the phase's
                      verdict, else nodes)
  --group TAG         colour by this tag or field (default as for html)
  --bars              the stacked bars instead of a scatter
  -o, --output FILE   where to write (default: standard output)
]], { usage_on_error = true })

local function find_label(L, name)
  for _, list in ipairs { L.phases, L.nested } do
    for _, label in ipairs(list) do
      if label == name or record.short(label) == name or label == "sub_" .. name .. "_ns" then
        return label
      end
    end
  end
end

function C.run(args, ctx)
  local opts, files = ctx.options(args, {
    ["--output"] = "value", ["--phase"] = "value", ["--by"] = "value", ["--group"] = "value",
    ["--bars"] = "flag", short = { ["-o"] = "--output" } })
  if not opts.phase and not opts.bars then ctx.usage("say --phase PHASE or --bars") end
  if opts.phase and opts.bars then ctx.usage("give one of --phase and --bars") end
  local set = ctx.read(files)
  local L = set:layout()
  local label
  if opts.phase then
    label = find_label(L, opts.phase)
    if not label then
      local names = {}
      for _, p in ipairs(L.phases) do names[#names + 1] = p end
      for _, n in ipairs(L.nested) do names[#names + 1] = n end
      ctx.usage(("--phase %s: not a phase or nested region of these records (valid: %s)")
        :format(opts.phase, table.concat(names, ", ")))
    end
  end
  -- --by names a number to plot against, --group any tag or field: each
  -- error lists those the records hold
  if opts.by then cli.need_field(set, "--by " .. opts.by, opts.by, "number") end
  if opts.group then cli.need_field(set, "--group " .. opts.group, opts.group) end
  -- only the plot asked for is drawn (and fitted), each step with its
  -- progress line
  local desc = html.describe(set, { group = opts.group, by = opts.by, plots = { label },
    progress = ctx.progress })
  -- what the page warns about (mixed variants, phases past their wall):
  -- on stderr, and in the plot itself
  local f = desc.findings or {}
  for _, w in ipairs { report.variants(f.variants) or false, report.overrun(f.overrun) or false } do
    if w then
      ctx.err:write(table.concat(report.wrap(ctx.name .. ": " .. w:gsub("\n", " "), report.width,
        "  ", ""), "\n"), "\n")
    end
  end
  local text
  if opts.bars then
    desc.bars.warnings = desc.warnings
    text = svg.stacked_bars(desc.bars)
  else
    for _, s in ipairs(desc.scatters) do
      if s.label == label then
        s.svg.warnings = desc.warnings
        text = svg.scatter(s.svg)
      end
    end
  end
  local w = ctx.output(opts.output)
  w.write('<?xml version="1.0" encoding="UTF-8"?>\n' .. text .. "\n")
  w.close()
  return 0
end

return C
