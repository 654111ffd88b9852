-- phaseprobe html: a self-contained HTML report with SVG plots.
local util = require "phaseprobe.cli.cliutil"
local html = require "phaseprobe.output.html"

local USAGE = [[
usage: phaseprobe html [-o OUT.html] [--group TAG] [--by QUANTITY] [--title TEXT] LOG...

Writes one HTML file (no scripts, nothing fetched) with, per group, the
decomposition table (mean, median, min, max and share of wall per phase,
nested region, residue and device time), a stacked bar per group of the
phase partition, the unattributed residue and the starvation
(device_window_ns - kernel_ns), and per phase a scatter of its time against
the quantity it scales with, with the fitted line and the verdict.

LOG is a probe log, or a .csv / .jsonl export; several are reported together.
  -o, --output FILE   where to write (default: standard output)
  --group TAG         group by this tag or field (default: the shape tag,
                      else the first tag, else nodes)
  --by QUANTITY       plot every phase against this count (default: the
                      quantity of its verdict, else nodes)
  --title TEXT        the page title]]

local SPEC = {
  ["--output"] = "value", ["--group"] = "value", ["--by"] = "value", ["--title"] = "value",
  short = { ["-o"] = "--output" },
}

return util.command("html", "write a self-contained HTML report with SVG plots", USAGE, function(argv, ctx)
  local opts, pos = ctx.options(argv, SPEC)
  local runs = util.runs(ctx, pos)
  local set = util.concat(runs)
  util.need_fields(ctx, set, opts, { "by", "group" })
  local sources = {}
  for _, r in ipairs(runs) do sources[#sources + 1] = r.path end
  util.write_output(ctx, opts.output, html.report(set, {
    title = opts.title,
    source = table.concat(sources, ", "),
    group = opts.group,
    by = opts.by,
  }))
  return 0
end)
