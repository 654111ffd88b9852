-- phaseprobe export: records as CSV or JSON lines.
local cli = require "phaseprobe.cliutil"
local export = require "phaseprobe.export"

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

local SPEC = {
  { "--csv", key = "csv" },
  { "--jsonl", key = "jsonl" },
  { "-o", "--output", key = "out", value = true },
}

local function run(argv, ctx)
  local out, err = cli.streams(ctx)
  local opts, pos = cli.parse_args(argv, SPEC)
  if not opts then return cli.usage_error("export", USAGE, pos, err) end
  if opts.help then
    out:write(USAGE, "\n")
    return cli.OK
  end
  if opts.csv and opts.jsonl then return cli.usage_error("export", USAGE, "give one of --csv and --jsonl", err) end
  local format = opts.csv and "csv" or opts.jsonl and "jsonl" or nil
  if not format and opts.out then
    if opts.out:match("%.[cC][sS][vV]$") then
      format = "csv"
    elseif opts.out:match("%.jsonl$") or opts.out:match("%.ndjson$") then
      format = "jsonl"
    end
  end
  if not format then return cli.usage_error("export", USAGE, "say --csv or --jsonl", err) end
  if #pos == 0 then return cli.usage_error("export", USAGE, "no LOG given", err) end
  local runs, lerr = cli.load_all(pos)
  if not runs then
    cli.say("export", lerr, err)
    return cli.BAD_INPUT
  end
  local ok, werr = export[format](cli.concat(runs), opts.out or "-", out)
  if not ok then
    cli.say("export", werr, err)
    return cli.BAD_INPUT
  end
  return cli.OK
end

return { summary = "write records as CSV or JSON lines", usage = USAGE, run = run }
