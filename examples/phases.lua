-- One dispatch's worth of probe calls, no GPU needed: charges every phase of
-- the default (reference) schema, a nested region and the counts, emits, and
-- prints the line. Its fields and their order are the reference's; after
-- ptx_cache_misses come ours.
--   lua5.4 examples/phases.lua
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"

local function work(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end

pp.enable()
pp.sink("none") -- the line is printed below instead of going to stderr
local phases = pp.default_schema().phases
pp.begin()
for _, phase in ipairs(phases) do
  local _ <close> = pp.phase(phase)
  if phase == "ptx" then
    local _d <close> = pp.nested("ptx_digest")
    work(20000)
  end
  work(2000)
end
pp.counts { nodes = 12410, ptx_bytes = 3900000, buffers = 5, bindings = 6, fixpoint = 1, grid_blocks = 132 }
pp.cache("ptx", "hit")
pp.finish()
local r = pp.emit { seq = 1 }
print(r)
print(("named_host_ns %d + unattributed_ns %d = %d, wall_ns %d"):format(
  r.named_host_ns, r.unattributed_ns, r.named_host_ns + r.unattributed_ns, r.wall_ns))
assert(r.named_host_ns + r.unattributed_ns == r.wall_ns)
