-- phaseprobe trace: records as a Chrome trace-event JSON timeline.
local util = require "phaseprobe.cli.cliutil"
local export = require "phaseprobe.output.export"

local USAGE = [[
usage: phaseprobe trace [-o OUT.json] LOG...

Writes a Chrome trace-event JSON file that the Perfetto UI (ui.perfetto.dev)
and chrome://tracing open: one process per LOG, one track per host thread
with each dispatch as a slice and its phases as child slices (nested regions
inside their phase), and two device tracks per thread: the outer device
window and the kernel-only window. Record fields go into each slice's args.
Phases are laid end to end in schema order (they are a partition of charged
time, not a record of when each ran); logs without start_ns lay dispatches
end to end. The file's metadata says which.

LOG is a probe log, or a .csv / .jsonl export.
  -o, --output FILE   where to write (default: standard output)]]

local SPEC = { ["--output"] = "value", short = { ["-o"] = "--output" } }

return util.command("trace", "write a Perfetto / chrome://tracing timeline (trace-event JSON)", USAGE,
  function(argv, ctx)
    local opts, pos = ctx.options(argv, SPEC)
    local ok, werr = export.trace_runs(util.runs(ctx, pos), opts.output or "-", ctx.out)
    if not ok then ctx.fail(werr) end
    return 0
  end)
