--- phaseprobe whatif: projections beside measurements.
local cli = require "phaseprobe.cli"
local whatif = require "phaseprobe.analysis.whatif"
local report = require "phaseprobe.output.report"

local C = cli.reader("project wall and enqueue time under a change; check it against a measured variant", [[
usage: phaseprobe whatif [options] STEP... FILE...

Projects wall and enqueue time per dispatch (and per encode) if a change were
made, beside what was measured. Steps:
  --remove P       remove phase or nested region P (e.g. ptx_digest)
  --scale P=F      scale phase or nested region P by F (e.g. ptx=0.5)
  --hits C         turn cache C's misses into hits (priced by the median
                   phase time of missing vs hitting dispatches)
  --dispatches N   N dispatches per encode
When the variant was also run and its records are tagged (e.g. knob=memo_digest):
  --variant F=V    the variant is the records with F=V; the projection is made
                   from the others (F absent or F=none) and its error shown
  --base V         the base value of F (default: none or base; records
                   without F are base records too)
other options:
  --per-encode N   dispatches per encode, when the records have no encode field
  --encode F       field naming a dispatch's encode (default encode)
  --wait P         phases on the wait side: their savings do not reduce
                   enqueue_ns (repeatable; default release, readback)
]])

function C.run(args, ctx)
  local opts, files = ctx.options(args, {
    ["--remove"] = "list", ["--scale"] = "list", ["--hits"] = "list",
    ["--dispatches"] = "value", ["--variant"] = "value", ["--base"] = "value",
    ["--per-encode"] = "value", ["--encode"] = "value", ["--wait"] = "list" })
  local scenario = { remove = opts.remove, hits = opts.hits, scale = {} }
  for _, s in ipairs(opts.scale or {}) do
    local k, v = cli.pair(s, "--scale")
    scenario.scale[#scenario.scale + 1] = { k, cli.number(v, "--scale " .. k, 0) }
  end
  if opts.dispatches then scenario.dispatches = cli.number(opts.dispatches, "--dispatches", 0) end
  if not opts.remove and not opts.hits and #scenario.scale == 0 and not scenario.dispatches then
    ctx.usage("give at least one step: --remove, --scale, --hits or --dispatches")
  end
  local wopts = { encode = opts.encode }
  if opts.per_encode then
    wopts.dispatches_per_encode = cli.number(opts.per_encode, "--per-encode", 0)
  end
  if opts.wait then
    wopts.wait_phases = {}
    for i, w in ipairs(opts.wait) do wopts.wait_phases[i] = w:match("_ns$") and w or w .. "_ns" end
  end
  local set = ctx.read(files)
  -- every option's value is checked against the records before anything
  -- is written: a name they do not hold is a usage error that lists the
  -- valid ones
  local info = require("phaseprobe.analysis.analyze").schema(set)
  local function resolves(option, name, text)
    local ok, msg = pcall(whatif.resolve, info, name)
    if not ok then
      ctx.usage(string.format("%s %s: %s", option, text or name,
        tostring(msg):gsub("^phaseprobe%.[%w_.]+: ", "")))
    end
  end
  for _, name in ipairs(opts.remove or {}) do resolves("--remove", name) end
  for i, s in ipairs(scenario.scale) do resolves("--scale", s[1], opts.scale[i]) end
  if opts.hits then
    local caches = whatif.caches(set)
    for _, c in ipairs(opts.hits) do
      local known = false
      for _, k in ipairs(caches) do if k == c then known = true end end
      if not known then
        ctx.usage(string.format("--hits %s: no cache '%s' (valid: %s)", c, c,
          #caches > 0 and table.concat(caches, ", ") or "none in these records"))
      end
    end
  end
  for i, w in ipairs(wopts.wait_phases or {}) do
    local known = false
    for _, p in ipairs(info.phases) do if p == w then known = true end end
    if not known then
      local names = {}
      for _, p in ipairs(info.phases) do names[#names + 1] = p:gsub("_ns$", "") end
      ctx.usage(string.format("--wait %s: no phase '%s' (valid: %s)", opts.wait[i], opts.wait[i],
        table.concat(names, ", ")))
    end
  end
  local base, variant, k, v
  if opts.variant then
    k, v = cli.pair(opts.variant, "--variant")
    if not set:has(k) then
      ctx.usage(string.format("--variant %s: no field '%s' in the records (%s)", opts.variant, k,
        report.field_choices(set)))
    end
    base, variant = whatif.split(set, k, v, opts.base)
    if variant:count() == 0 then
      ctx.usage(string.format("--variant %s: no records with %s=%s (%s here: %s)", opts.variant, k,
        tostring(v), k, report.field_values(set, k)))
    end
    if base:count() == 0 then
      local values = {}
      for _, g in ipairs(set:group(k)) do
        if not g.missing and report.key_text(g, k) ~= v then
          values[#values + 1] = report.key_text(g, k)
        end
      end
      ctx.usage(string.format("%sno base records (without %s, or %s=%s); say which records are "
        .. "the base with --base VALUE (%s here: %s)", opts.base and ("--base " .. opts.base .. ": ")
        or "", k, k, opts.base or "none or base", k,
        #values > 0 and table.concat(values, ", ") or "no other value"))
    end
  end
  local ok, r = pcall(function()
    if opts.variant then return whatif.check(base, variant, scenario, wopts) end
    return whatif.project(set, scenario, wopts)
  end)
  if not ok then
    if type(r) == "table" then error(r, 0) end
    ctx.fail(tostring(r))
  end
  if opts.variant then
    ctx.write(string.format("base: %s; variant %s=%s: %s\n",
      report.count(base:count(), "record"), k, tostring(v), report.count(variant:count(), "record")))
  end
  ctx.write(report.whatif(r), "\n")
  return 0
end

return C
