-- phaseprobe.output.export: the exporters under one name.
--
--   export.trace, export.trace_runs, export.trace_text   output/trace.lua
--   export.csv, export.read_csv                          output/csv.lua
--   export.jsonl, export.read_jsonl                      output/json.lua
--   export.MAX_BYTES, export.MAX_LINE                    output/files.lua
--
-- Each is the function of its module itself (same errors, same levels).
local trace = require "phaseprobe.output.trace"
local csv = require "phaseprobe.output.csv"
local json = require "phaseprobe.output.json"
local files = require "phaseprobe.output.files"

return {
  trace = trace.trace,
  trace_runs = trace.trace_runs,
  trace_text = trace.trace_text,
  csv = csv.csv,
  read_csv = csv.read_csv,
  jsonl = json.jsonl,
  read_jsonl = json.read_jsonl,
  MAX_BYTES = files.MAX_BYTES,
  MAX_LINE = files.MAX_LINE,
  _encode = json.encode, -- for the specs
}
