--- phaseprobe export: records as CSV or JSON lines (the exporters of
-- phaseprobe.output.export over the record set the inputs make).
local cli = require "phaseprobe.cli"
local export = require "phaseprobe.output.export"

local C = cli.reader("write records as CSV or JSON lines", [[
usage: phaseprobe export (--csv | --jsonl) [-o OUT] [options] FILE...

Writes every record of the inputs (in order) as CSV (a header row, strings
quoted, numbers bare) or as JSON lines (one object per record, keys in line
order), ready for DuckDB, pandas or a spreadsheet. Integers are exact up to
2^64-1. Without --csv/--jsonl the format follows OUT's extension.

  --csv               CSV
  --jsonl             JSON lines
  -o, --output FILE   where to write (default: standard output)
]], { usage_on_error = true })

function C.run(args, ctx)
  local opts, files = ctx.options(args, { ["--csv"] = "flag", ["--jsonl"] = "flag",
    ["--output"] = "value", short = { ["-o"] = "--output" } })
  if opts.csv and opts.jsonl then ctx.usage("give one of --csv and --jsonl") end
  local format = opts.csv and "csv" or opts.jsonl and "jsonl" or nil
  if not format and opts.output then
    local lower = opts.output:lower()
    if lower:match("%.csv$") then
      format = "csv"
    elseif lower:match("%.jsonl$") or lower:match("%.ndjson$") then
      format = "jsonl"
    end
  end
  if not format then ctx.usage("say --csv or --jsonl") end
  local set = ctx.read(files)
  local prog = ctx.progress("writing " .. (format == "csv" and "CSV" or "JSON lines"),
    { total = set:count(), unit = "records" })
  local ok, werr = export[format](set, opts.output or "-", ctx.out,
    { progress = function(done) prog:update(done) end })
  prog:done()
  if not ok then ctx.fail(werr) end
  return 0
end

return C
