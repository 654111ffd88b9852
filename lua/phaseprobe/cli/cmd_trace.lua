--- phaseprobe trace: records as a Chrome trace-event JSON timeline.
local cli = require "phaseprobe.cli"
local export = require "phaseprobe.output.export"
local report = require "phaseprobe.output.report"

local C = cli.reader("write a Perfetto / chrome://tracing timeline (trace-event JSON)", [[
usage: phaseprobe trace [-o OUT.json] [--all | --limit N] [options] FILE...

Writes a Chrome trace-event JSON file that the Perfetto UI (ui.perfetto.dev)
and chrome://tracing open: one process per input, one track per host thread
with each dispatch as a slice and its phases as child slices (nested regions
inside their phase), two device tracks per thread (the outer device window
and the kernel-only window), and counter tracks of each phase's mean time
per dispatch and the largest wall over the run. Record fields go into each
slice's args. Phases are laid end to end in schema order (they are a
partition of charged time, not a record of when each ran); logs without
start_ns lay dispatches end to end. The file's metadata says which.

An input of more than 5,000 dispatches is drawn in full for its first and
last 500 and its 4,000 slowest (by wall), and in the counter tracks for all
of them, so the file stays one a viewer opens; stderr says what was left out.

  -o, --output FILE   where to write (default: standard output)
  --all               every dispatch in full (large inputs give large files)
  --limit N           N dispatches per input in full (default 5,000)
]], { usage_on_error = true })

function C.run(args, ctx)
  local opts, files = ctx.options(args, { ["--output"] = "value", ["--all"] = "flag",
    ["--limit"] = "value", short = { ["-o"] = "--output" } })
  if opts.all and opts.limit then ctx.usage("give one of --all and --limit") end
  local limit = opts.limit and math.floor(cli.number(opts.limit, "--limit", 1)) or nil
  local set = ctx.read(files)
  local runs = {}
  for _, g in ipairs(set:group("@file")) do
    runs[#runs + 1] = { name = tostring(g.key):match("([^/]+)$") or tostring(g.key), set = g.set }
  end
  local prog = ctx.progress("writing the trace", { total = set:count(), unit = "records" })
  local ok, info = export.trace_runs(runs, opts.output or "-", ctx.out, { all = opts.all,
    limit = limit, progress = function(done) prog:update(done) end })
  prog:done()
  if not ok then ctx.fail(info) end
  for _, r in ipairs(info.runs) do
    if r.detailed < r.dispatches then
      ctx.err:write(table.concat(report.wrap(string.format("%s: %s: %s dispatches; drawn in "
        .. "full: the first %s, the last %s and the %s slowest (by wall); all of them are in the "
        .. "counter tracks. --all draws every dispatch, --limit N draws N, --where F=V selects "
        .. "records.", ctx.name, r.name, report.num(r.dispatches), report.num(r.first),
        report.num(r.last), report.num(r.slowest)), report.width), "\n"), "\n")
    end
  end
  return 0
end

return C
