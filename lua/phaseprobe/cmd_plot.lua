-- phaseprobe plot: one SVG plot.
local cli = require "phaseprobe.cliutil"
local html = require "phaseprobe.html"
local recview = require "phaseprobe.recview"
local svg = require "phaseprobe.svg"

local USAGE = [[
usage: phaseprobe plot --phase PHASE [--by QUANTITY] [--group TAG] [-o OUT.svg] LOG...
       phaseprobe plot --bars [--group TAG] [-o OUT.svg] LOG...

With --phase, a scatter of that phase's time (or a nested region's) against
QUANTITY, one colour per group, with the fitted line and the verdict. With
--bars, the stacked bar per group of the phase partition, the residue and
the starvation.

LOG is a probe log, or a .csv / .jsonl export.
  --phase PHASE       e.g. ptx_ns (or ptx), sub_ptx_digest_ns
  --by QUANTITY       the x axis (default: the quantity of the phase's
                      verdict, else nodes)
  --group TAG         colour by this tag or field (default as for html)
  --bars              the stacked bars instead of a scatter
  -o, --output FILE   where to write (default: standard output)]]

local SPEC = {
  { "-o", "--output", key = "out", value = true },
  { "--phase", key = "phase", value = true },
  { "--by", key = "by", value = true },
  { "--group", key = "group", value = true },
  { "--bars", key = "bars" },
}

local function find_label(L, name)
  for _, list in ipairs { L.phases, L.nested } do
    for _, label in ipairs(list) do
      if label == name or recview.phase_short(label) == name or label == "sub_" .. name .. "_ns" then
        return label
      end
    end
  end
end

local function run(argv, ctx)
  local out, err = cli.streams(ctx)
  local opts, pos = cli.parse_args(argv, SPEC)
  if not opts then return cli.usage_error("plot", USAGE, pos, err) end
  if opts.help then
    out:write(USAGE, "\n")
    return cli.OK
  end
  if not opts.phase and not opts.bars then
    return cli.usage_error("plot", USAGE, "say --phase PHASE or --bars", err)
  end
  if opts.phase and opts.bars then return cli.usage_error("plot", USAGE, "give one of --phase and --bars", err) end
  if #pos == 0 then return cli.usage_error("plot", USAGE, "no LOG given", err) end
  local runs, lerr = cli.load_all(pos)
  if not runs then
    cli.say("plot", lerr, err)
    return cli.BAD_INPUT
  end
  local records = cli.concat(runs)
  local L = recview.layout(records[1])
  local label
  if opts.phase then
    label = find_label(L, opts.phase)
    if not label then
      local names = {}
      for _, p in ipairs(L.phases) do names[#names + 1] = p end
      for _, n in ipairs(L.nested) do names[#names + 1] = n end
      return cli.usage_error("plot", USAGE, ("--phase %s: not a phase or nested region of these records "
        .. "(valid: %s)"):format(opts.phase, table.concat(names, ", ")), err)
    end
  end
  for _, o in ipairs { "by", "group" } do
    local missing = opts[o] and cli.missing_field(records, opts[o])
    if missing then return cli.usage_error("plot", USAGE, ("--%s %s: %s"):format(o, opts[o], missing), err) end
  end
  local fits = label and cli.analysis_fits(records, opts.by) or nil
  local desc = html.describe(records, { group = opts.group, by = opts.by, fits = fits })
  local text
  if opts.bars then
    text = svg.stacked_bars(desc.bars)
  else
    for _, s in ipairs(desc.scatters) do
      if s.label == label then text = svg.scatter(s.svg) end
    end
  end
  local ok, werr = cli.write_output(opts.out, '<?xml version="1.0" encoding="UTF-8"?>\n' .. text .. "\n", out)
  if not ok then
    cli.say("plot", werr, err)
    return cli.BAD_INPUT
  end
  return cli.OK
end

return { summary = "write one SVG plot (a phase against a quantity, or the stacked bars)", usage = USAGE,
  run = run }
