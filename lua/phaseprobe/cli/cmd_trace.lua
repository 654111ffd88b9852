--- phaseprobe trace: records as a Chrome trace-event JSON timeline.
local cli = require "phaseprobe.cli"
local export = require "phaseprobe.output.export"

local C = {
  reads = true,
  usage_on_error = true,
  summary = "write a Perfetto / chrome://tracing timeline (trace-event JSON)",
  usage = [[
usage: phaseprobe trace [-o OUT.json] [options] FILE...

Writes a Chrome trace-event JSON file that the Perfetto UI (ui.perfetto.dev)
and chrome://tracing open: one process per input, one track per host thread
with each dispatch as a slice and its phases as child slices (nested regions
inside their phase), and two device tracks per thread: the outer device
window and the kernel-only window. Record fields go into each slice's args.
Phases are laid end to end in schema order (they are a partition of charged
time, not a record of when each ran); logs without start_ns lay dispatches
end to end. The file's metadata says which.

  -o, --output FILE   where to write (default: standard output)
]] .. cli.INPUT_HELP,
}

function C.run(args, ctx)
  local opts, files = ctx.options(args, { ["--output"] = "value", short = { ["-o"] = "--output" } })
  if #files == 0 then ctx.usage("no input: give one or more files, or - for standard input") end
  local set = ctx.read(files)
  local runs = {}
  for _, g in ipairs(set:group("@file")) do
    runs[#runs + 1] = { name = tostring(g.key):match("([^/]+)$") or tostring(g.key), set = g.set }
  end
  local ok, werr = export.trace_runs(runs, opts.output or "-", ctx.out)
  if not ok then ctx.fail(werr) end
  return 0
end

return C
