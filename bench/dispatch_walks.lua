-- The whole-program walks of the reference dispatcher, per node, on the host:
-- validation (prepare), digest and fingerprint (ptx), lowering (ptx, on a
-- miss) and the CPU evaluation (the demo's oracle). Prints ns per node at
-- each size and the ratio to the 1,000-node baseline measured in the same
-- run: a ratio near 1 means the walk is linear in nodes.
--
--   lua5.4 bench/dispatch_walks.lua          (from the repository root)
local rounds = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/rounds.lua")
local pp = rounds.start()
print(rounds.clock_note(pp))
local P = require "phaseprobe.dispatch.program"
local D = require "phaseprobe.dispatch"
local lower = require "phaseprobe.dispatch.lower"

local best_ns = rounds.best

local sizes = { 1000, 2500, 10000 }
local walks = {
  { "validate", 20, function(p) p:validate() end },
  { "digest", 20, function(p) D.digest(p) end },
  { "fingerprint", 20, function(p, s) D.fingerprint(s) end },
  { "markers", 20, function(_, _, ptx) D.count_markers(ptx) end },
  { "lower", 5, function(p) lower.ptx(p) end },
  { "evaluate n=256", 3, function(p, _, _, inputs) p:evaluate(inputs, 256, 1) end },
}
local progs = {}
for i, n in ipairs(sizes) do
  local p = P.generate{ nodes = n, barriers = 4, seed = 5 }
  progs[i] = { p = p, s = p:validate(), ptx = lower.ptx(p), inputs = P.inputs(p, 256, 1) }
end
print(string.format("%-16s %14s %14s %14s   ratio to 1,000 nodes (per node)", "walk",
  "1,000 ns/node", "2,500 ns/node", "10,000 ns/node"))
for _, w in ipairs(walks) do
  local per = {}
  for i, n in ipairs(sizes) do
    local g = progs[i]
    per[i] = best_ns(w[2], function() w[3](g.p, g.s, g.ptx, g.inputs) end) / n
  end
  print(string.format("%-16s %14.1f %14.1f %14.1f   %.2f %.2f", w[1], per[1], per[2], per[3],
    per[2] / per[1], per[3] / per[1]))
end
print(string.format("(marker scan with %s; clock %s)", pp.ptx.count and "phaseprobe.ptx.count" or "a Lua find loop",
  pp.clock().name))
