-- cli_run.lua: the phaseprobe command run in this process, on real streams
-- (temporary files) read back afterwards.
--
--   local run = require "helpers.cli_run"
--   local rc, out, err = run("report", "examples/data/demo-h200.log")
local cli = require "phaseprobe.cli"
local report = require "phaseprobe.output.report"
local text_of = require("helpers.files").text_of

return function(...)
  local out, err = io.tmpfile(), io.tmpfile()
  local rc = cli.main({ ... }, out, err)
  -- --raw and --wide are the report module's settings: back to the default
  report.raw, report.wide = false, false
  return rc, text_of(out), text_of(err)
end
