--- phaseprobe compare: two groups side by side.
local cli = require "phaseprobe.cli"
local compare = require "phaseprobe.analysis.compare"
local report = require "phaseprobe.output.report"
local records = require "phaseprobe.records"

local C = cli.reader("two groups (files, shapes, runs) side by side: which phases explain the difference", [[
usage: phaseprobe compare [options] FILE_A FILE_B
       phaseprobe compare [options] --by FIELD VALUE_A VALUE_B FILE...

Compares the mean cost per dispatch of two groups of records: two files, or
the records of two values of a field or tag (--by shape prose cjk). Every
phase's difference is given in ns and as a share of the difference in mean
wall time; phases, unattributed_ns and "(other)" add up to it exactly.
Nested regions are listed apart. With an `encode` field in both groups (or
--encode F), the difference per encode is split into more dispatches and
costlier dispatches.

options:
  --by FIELD       compare two values of FIELD (the first two arguments)
  --encode F       field naming the encode a dispatch belongs to (default encode)
]])

function C.run(args, ctx)
  local opts, pos = ctx.options(args, { ["--by"] = "value", ["--encode"] = "value" })
  local r
  if opts.by then
    if #pos < 3 then ctx.usage("--by " .. opts.by .. ": give VALUE_A VALUE_B and then files") end
    -- (the values as their text: matched exactly, a u64 past 2^63-1 included)
    local va, vb = table.remove(pos, 1), table.remove(pos, 1)
    local set = ctx.read(pos)
    if not set:has(opts.by) then
      ctx.usage(string.format("--by %s: no field '%s' in the records (%s)", opts.by, opts.by,
        report.field_choices(set)))
    end
    for _, v in ipairs({ va, vb }) do
      if records.equal(set, opts.by, v):count() == 0 then
        ctx.usage(string.format("--by %s: no records with %s=%s (%s here: %s)", opts.by, opts.by,
          tostring(v), opts.by, report.field_values(set, opts.by)))
      end
    end
    r = compare.by(set, opts.by, va, vb, { encode = opts.encode, progress = ctx.progress })
  else
    if #pos ~= 2 then
      ctx.usage("give two files (or --by FIELD VALUE_A VALUE_B FILE...), got " .. #pos)
    end
    if pos[1] == pos[2] then ctx.usage("the two files are the same: " .. pos[1]) end
    local set = ctx.read(pos)
    local names = {}
    for i, f in ipairs(pos) do names[i] = f == "-" and "(stdin)" or f end
    local a, b = set:where("@file", names[1]), set:where("@file", names[2])
    for i, g in ipairs({ a, b }) do
      if g:count() == 0 then ctx.fail(names[i] .. ": no record lines") end
    end
    r = compare.sets(a, b, { labels = names, encode = opts.encode, progress = ctx.progress })
  end
  ctx.write(report.compare(r), "\n")
  return 0
end

return C
