-- phaseprobe trace: records as a Chrome trace-event JSON timeline.
local cli = require "phaseprobe.cliutil"
local export = require "phaseprobe.export"

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

local SPEC = { { "-o", "--output", key = "out", value = true } }

local function run(argv, ctx)
  local out, err = cli.streams(ctx)
  local opts, pos = cli.parse_args(argv, SPEC)
  if not opts then return cli.usage_error("trace", USAGE, pos, err) end
  if opts.help then
    out:write(USAGE, "\n")
    return cli.OK
  end
  if #pos == 0 then return cli.usage_error("trace", USAGE, "no LOG given", err) end
  local runs, lerr = cli.load_all(pos)
  if not runs then
    cli.say("trace", lerr, err)
    return cli.BAD_INPUT
  end
  local ok, werr = export.trace_runs(runs, opts.out or "-", out)
  if not ok then
    cli.say("trace", werr, err)
    return cli.BAD_INPUT
  end
  return cli.OK
end

return { summary = "write a Perfetto / chrome://tracing timeline (trace-event JSON)", usage = USAGE, run = run }
