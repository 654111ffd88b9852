-- bench/ptx_scan.lua: PTX scanner throughput on a 4 MB program, beside
-- `grep -c -F` of the marker and a pure-Lua string.find loop measured in the
-- same run.
--
--   lua5.4 bench/ptx_scan.lua [MB]        (default 4; make bench runs it)
--
-- The text is built from real PTX: nvcc's entries from examples/kernels
-- (renamed per copy) interleaved with reference-shaped entries holding three
-- grid barriers each, under one module header, as the reference's programs
-- are single modules of up to 3.9 MB; then one reference-shaped entry alone,
-- then nvcc's debug (-G) entries of spec/fixtures/ptx/syncs-G.ptx.
local rounds = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/rounds.lua")
local pp = rounds.start()
print(rounds.clock_note(pp))
local vyre = require "helpers.vyre_ptx"

local MB = tonumber(arg[1]) or 4
local MARKER = pp.ptx.default_marker
local TARGET = MB * 1024 * 1024

local read = require("helpers.files").slurp

-- The entry definitions of a PTX file, each as {name=, text=}.
local function entries(text)
  local out = {}
  for whole, name in text:gmatch("(%.visible%s+%.entry%s+([%w_]+)%b()[^{]*%b{})") do
    out[#out + 1] = { name = name, text = whole }
  end
  return out
end

-- Appends copy number `copy` of each entry of pool to parts, renamed
-- NAME_<copy> so that no two copies collide; returns the bytes appended.
local function append_copy(parts, pool, copy)
  local bytes = 0
  for _, e in ipairs(pool) do
    local t = e.text:gsub(e.name, e.name .. "_" .. copy) .. "\n"
    parts[#parts + 1] = t
    bytes = bytes + #t
  end
  return bytes
end

local function build()
  local parts = {
    vyre.header,
    ".global .align 4 .u32 _vyre_grid_barrier[1];\n",
    ".const .align 4 .b8 coeffs[64];\n.global .align 4 .b8 histogram[256];\n",
    ".extern .shared .align 16 .b8 spill[];\n\n",
  }
  local pool = {}
  for _, f in ipairs({ "params", "shared", "gridsync" }) do
    for _, e in ipairs(entries(read("examples/kernels/" .. f .. ".ptx"))) do
      if e.name ~= "no_params" then pool[#pool + 1] = e end -- it calls a .func
    end
  end
  local size, copy = 0, 0
  for _, p in ipairs(parts) do size = size + #p end
  while size < TARGET do
    copy = copy + 1
    size = size + append_copy(parts, pool, copy)
    local v = vyre.entry { barriers = 3, name = "main_" .. copy } .. "\n"
    parts[#parts + 1] = v
    size = size + #v
  end
  return table.concat(parts), copy
end

-- Best of n runs, in ns, and the last run's result.
local best = rounds.best

-- Best of n runs, in ns, on text t.
local function measure(t, label)
  local bytes = #t
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "wb"))
  f:write(t)
  f:close()
  local rows = {}
  local function row(name, ns, note)
    rows[#rows + 1] = { name = name, ns = ns, note = note or "" }
    return ns
  end
  local R = 15
  local expected = pp.ptx.count(t, MARKER)
  local t_count, n = best(R * 3, function() return pp.ptx.count(t, MARKER) end)
  assert(n == expected)
  row("pp.ptx.count (marker)", t_count)
  row("pp.ptx.lines", (best(R * 3, function() return pp.ptx.lines(t) end)))
  row("pp.ptx.digest (XXH3-64)", (best(R * 3, function() return pp.ptx.digest(t) end)))
  local t_sum, s = best(R, function() return pp.ptx.summary(t) end)
  assert(not s.partial and s.markers[MARKER] == expected)
  row("pp.ptx.summary (full scan, module facts)", t_sum)
  local t_scan, r = best(R, function() return pp.ptx.scan(t) end)
  assert(not r.partial, r.errors[1] and r.errors[1].what)
  assert(r.markers[MARKER] == expected)
  row("pp.ptx.scan (full scan + per-entry tables)", t_scan,
    bytes >= pp.ptx.parallel_min and "scan on a second thread" or "")
  local saved = pp.ptx.parallel_min
  pp.ptx.parallel_min = false
  local t_one, r1 = best(R, function() return pp.ptx.scan(t) end)
  pp.ptx.parallel_min = saved
  assert(#r1.entries == #r.entries and r1.markers[MARKER] == expected)
  row("pp.ptx.scan, one thread (parallel_min = false)", t_one)
  local t_find, nf = best(5, function()
    local c, i = 0, 1
    while true do
      local _, e = string.find(t, MARKER, i, true)
      if not e then return c end
      c, i = c + 1, e + 1
    end
  end)
  assert(nf == expected)
  row("Lua string.find loop (marker)", t_find)
  local cmd = ("grep -c -F '%s' %s"):format(MARKER, tmp)
  local t_grep, out = best(7, function()
    local p = io.popen(cmd)
    local o = p:read("a")
    p:close()
    return o
  end)
  local t_spawn = best(7, function()
    local p = io.popen(("grep -c -F '%s' /dev/null"):format(MARKER))
    p:read("a")
    p:close()
  end)
  assert(tonumber(out) == expected, "grep -c counts lines: " .. out)
  local t_grep_net = math.max(t_grep - t_spawn, 1)
  row("grep -c -F (marker, incl. process start)", t_grep)
  row("grep -c -F (marker, process start subtracted)", t_grep_net, ("start %.2f ms"):format(t_spawn / 1e6))
  os.remove(tmp)

  print(("== %s: %.2f MB (%d bytes, %d lines), %d entries, %d barrier markers")
    :format(label, bytes / 1048576, bytes, r.lines, #r.entries, expected))
  print(("%-46s %10s %10s  %s"):format("what", "ms", "GB/s", ""))
  for _, x in ipairs(rows) do
    print(("%-46s %10.3f %10.2f  %s"):format(x.name, x.ns / 1e6, bytes / x.ns, x.note))
  end
  print("ratios (same run):")
  print(("  count   vs grep -c (process start subtracted): %6.2fx"):format(t_grep_net / t_count))
  print(("  count   vs grep -c (as a caller pays it):      %6.2fx"):format(t_grep / t_count))
  print(("  count   vs Lua string.find loop:               %6.2fx"):format(t_find / t_count))
  print(("  summary vs grep -c (process start subtracted): %6.2fx"):format(t_grep_net / t_sum))
  print(("  scan    vs grep -c (process start subtracted): %6.2fx"):format(t_grep_net / t_scan))
  print(("  scan    vs Lua string.find loop:               %6.2fx"):format(t_find / t_scan))
  print(("  scan    vs the same on one thread:             %6.2fx"):format(t_one / t_scan))
  local function verdict(name, ns, target)
    local g = bytes / ns
    print(("target %-30s >= %.1f GB/s: %5.2f GB/s  %s"):format(name, target, g,
      g >= target and "met" or ("MISSED by %.0f%%"):format((1 - g / target) * 100)))
  end
  verdict("marker count", t_count, 3)
  verdict("full scan (summary)", t_sum, 1)
  verdict("full scan + entry tables", t_scan, 1)
  verdict("the same on one thread", t_one, 1)
  print()
end

local mixed, copies = build()
measure(mixed, ("mixed module (%d copies of nvcc's entries + a reference-shaped entry each)"):format(copies))

-- nvcc's debug code (-G): the entries of spec/fixtures/ptx/syncs-G.ptx,
-- renamed per copy, where grid syncs are found by following the barrier
-- counter's address through register copies.
local function build_debug()
  local text = read("spec/fixtures/ptx/syncs-G.ptx")
  local head = text:match("^(.-)\n%.visible %.entry") or ""
  local parts, size, copy = { head, "\n" }, #head + 1, 0
  local pool = entries(text)
  while size < TARGET do
    copy = copy + 1
    size = size + append_copy(parts, pool, copy)
  end
  return table.concat(parts), copy
end
local debug, dcopies = build_debug()
measure(debug, ("debug (-G) module (%d copies of nvcc -G entries with grid syncs)"):format(dcopies))

-- One entry holding the whole program, as the reference's "main" does.
local k = 1
while #vyre.program { barriers = k } < TARGET do k = k * 2 end
local lo, hi = k // 2, k
while hi - lo > 1 do
  local mid = (lo + hi) // 2
  if #vyre.program { barriers = mid } < TARGET then lo = mid else hi = mid end
end
measure(vyre.program { barriers = hi }, ("reference-shaped module (one entry, %d grid barriers)"):format(hi))
