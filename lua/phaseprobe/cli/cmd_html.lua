--- phaseprobe html: a self-contained HTML report with SVG plots.
local cli = require "phaseprobe.cli"
local html = require "phaseprobe.output.html"

local C = cli.reader("write a self-contained HTML report with SVG plots", [[
usage: phaseprobe html [-o OUT.html] [--group TAG] [--by QUANTITY] [--title TEXT] FILE...

Writes one HTML file (no scripts, nothing fetched) with, per group, the
decomposition table (mean, median, min, max and share of wall per phase,
nested region, residue and device time), a stacked bar per group of the
phase partition, the unattributed residue and the starvation
(device_window_ns - kernel_ns), and per phase a scatter of its time against
the quantity it scales with, with the fitted line and the verdict. Several
inputs are reported together.

  -o, --output FILE   where to write (default: standard output)
  --group TAG         group by this tag or field (default: the shape tag,
                      else the first tag, else nodes)
  --by QUANTITY       plot every phase against this count (default: the
                      quantity of its verdict, else nodes)
  --title TEXT        the page title
]], { usage_on_error = true })


function C.run(args, ctx)
  local opts, files = ctx.options(args, {
    ["--output"] = "value", ["--group"] = "value", ["--by"] = "value", ["--title"] = "value",
    short = { ["-o"] = "--output" } })
  local set = ctx.read(files)
  -- --by names a number to plot against, --group any tag or field: each
  -- error lists those the records hold
  if opts.by then cli.need_field(set, "--by " .. opts.by, opts.by, "number") end
  if opts.group then cli.need_field(set, "--group " .. opts.group, opts.group) end
  local sources = {}
  for _, f in ipairs(files) do sources[#sources + 1] = f == "-" and "(stdin)" or f end
  -- each step of the page (its tables, the fits, the plots, the warnings)
  -- with its progress line
  local page = html.report(set, {
    title = opts.title,
    source = table.concat(sources, ", "),
    group = opts.group,
    by = opts.by,
    progress = ctx.progress,
  })
  local w = ctx.output(opts.output)
  w.write(page)
  w.close()
  return 0
end

return C
