-- phaseprobe export: records as CSV or JSON lines.
local util = require "phaseprobe.cli.cliutil"
local export = require "phaseprobe.output.export"

local USAGE = [[
usage: phaseprobe export (--csv | --jsonl) [-o OUT] LOG...

Writes every record of the LOGs (in order) as CSV (a header row, strings
quoted, numbers bare) or as JSON lines (one object per record, keys in line
order), ready for DuckDB, pandas or a spreadsheet. Integers are exact up to
2^64-1. Without --csv/--jsonl the format follows OUT's extension.

LOG is a probe log, or a .csv / .jsonl export.
  --csv               CSV
  --jsonl             JSON lines
  -o, --output FILE   where to write (default: standard output)]]

local SPEC = { ["--csv"] = "flag", ["--jsonl"] = "flag", ["--output"] = "value", short = { ["-o"] = "--output" } }

return util.command("export", "write records as CSV or JSON lines", USAGE, function(argv, ctx)
  local opts, pos = ctx.options(argv, SPEC)
  if opts.csv and opts.jsonl then ctx.usage("give one of --csv and --jsonl") end
  local format = opts.csv and "csv" or opts.jsonl and "jsonl" or nil
  if not format and opts.output then
    if opts.output:match("%.[cC][sS][vV]$") then
      format = "csv"
    elseif opts.output:match("%.jsonl$") or opts.output:match("%.ndjson$") then
      format = "jsonl"
    end
  end
  if not format then ctx.usage("say --csv or --jsonl") end
  local ok, werr = export[format](util.concat(util.runs(ctx, pos)), opts.output or "-", ctx.out)
  if not ok then ctx.fail(werr) end
  return 0
end)
