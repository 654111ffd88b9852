-- Cost of the exports per record, against writing the same records as their
-- own lines (tostring) to a file, measured in the same run.
--   lua5.4 bench/export_cost.lua        (make bench runs it)
local rounds = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/rounds.lua")
local pp = rounds.start()
print(rounds.clock_note(pp))
local export = require "phaseprobe.output.export"
local html = require "phaseprobe.output.html"
local gen = require "helpers.records"

local N = 20000
local base = gen.generate()
local records = {}
local t = base[1].start_ns
for i = 1, N do
  local src = base[(i - 1) % #base + 1]
  local r = setmetatable({}, getmetatable(src))
  for k, v in pairs(src) do r[k] = v end
  r.seq, r.start_ns = i, t
  t = t + r.wall_ns + 1000
  records[i] = r
end
-- the exporters take a record set: the same records, value by value
local set = gen.set(records)

local tmp = require("helpers.files").tmpdir()
local dir = tmp.path

-- ns per record, the best of 3 runs
local function best(run) return rounds.best(3, run) / N end

-- the exporters take record sets (the one container)
local set = gen.set(records)
local lines = best(function()
  local f = assert(io.open(dir .. "/r.log", "wb"))
  for i = 1, #set do f:write(tostring(set[i]), "\n") end
  f:close()
end)
local rows = {
  { "csv", best(function() assert(export.csv(set, dir .. "/r.csv")) end) },
  { "jsonl", best(function() assert(export.jsonl(set, dir .. "/r.jsonl")) end) },
  { "trace", best(function() assert(export.trace(set, dir .. "/r.json", { all = true })) end) },
  { "read_csv", best(function() assert(export.read_csv(dir .. "/r.csv")) end) },
  { "read_jsonl", best(function() assert(export.read_jsonl(dir .. "/r.jsonl")) end) },
  { "html report", best(function() assert(html.write(set, dir .. "/r.html")) end) },
}
tmp:remove()
print(("exports, %d records (baseline: each record's line written to a file, %.2f us/record)"):format(N,
  lines / 1000))
print(("  %-12s %12s %10s"):format("", "us/record", "x lines"))
for _, r in ipairs(rows) do
  print(("  %-12s %12.2f %10.1f"):format(r[1], r[2] / 1000, r[2] / lines))
end
