-- phaseprobe html: a self-contained HTML report with SVG plots.
local cli = require "phaseprobe.cliutil"
local html = require "phaseprobe.html"

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
  { "-o", "--output", key = "out", value = true },
  { "--group", key = "group", value = true },
  { "--by", key = "by", value = true },
  { "--title", key = "title", value = true },
}

local function run(argv, ctx)
  local out, err = cli.streams(ctx)
  local opts, pos = cli.parse_args(argv, SPEC)
  if not opts then return cli.usage_error("html", USAGE, pos, err) end
  if opts.help then
    out:write(USAGE, "\n")
    return cli.OK
  end
  if #pos == 0 then return cli.usage_error("html", USAGE, "no LOG given", err) end
  local runs, lerr = cli.load_all(pos)
  if not runs then
    cli.say("html", lerr, err)
    return cli.BAD_INPUT
  end
  local records = cli.concat(runs)
  for _, o in ipairs { "by", "group" } do
    local missing = opts[o] and cli.missing_field(records, opts[o])
    if missing then return cli.usage_error("html", USAGE, ("--%s %s: %s"):format(o, opts[o], missing), err) end
  end
  local sources = {}
  for _, r in ipairs(runs) do sources[#sources + 1] = r.path end
  local page = html.report(records, {
    title = opts.title,
    source = table.concat(sources, ", "),
    group = opts.group,
    by = opts.by,
    fits = cli.analysis_fits(records, opts.by),
  })
  local ok, werr = cli.write_output(opts.out, page, out)
  if not ok then
    cli.say("html", werr, err)
    return cli.BAD_INPUT
  end
  return cli.OK
end

return { summary = "write a self-contained HTML report with SVG plots", usage = USAGE, run = run }
