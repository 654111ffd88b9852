-- Test records made by the probe itself: three input shapes with programs of
-- different sizes, where the ptx phase (and its nested digest and
-- fingerprint walks) scales with nodes and every other phase is a fixed cost
-- per dispatch plus noise. Deterministic: a small LCG drives the noise.
--
-- generate() gives plain tables of name = value (records are read-only: a
-- spec changes a table, then makes a record set of the list with set()).
local pp = require "phaseprobe"
local recs = require "phaseprobe.records"
local lcg = require("helpers.lcg").new

local M = {}

M.SHAPES = {
  { name = "prose", nodes = { 1800, 2300, 2900 } },
  { name = "code", nodes = { 5200, 6800, 8100 } },
  { name = "cjk", nodes = { 9400, 11000, 12410 } },
}

M.PTX_NS_PER_NODE = 79

-- opts.per_size: dispatches per program size (default 4); opts.start: give
-- records absolute start_ns laid out with gaps (default true); opts.seed.
function M.generate(opts)
  opts = opts or {}
  local rnd = lcg(opts.seed or 7)
  pp.use(pp.default_schema())
  pp.enable()
  pp.sink("none")
  pp.store.enable(true)
  pp.store.capacity(100000)
  pp.store.clear()
  local seq = 0
  for _, shape in ipairs(M.SHAPES) do
    pp.tag("shape", shape.name)
    for _, nodes in ipairs(shape.nodes) do
      for k = 1, opts.per_size or 4 do
        seq = seq + 1
        local ptx = M.PTX_NS_PER_NODE * nodes + 38000 + rnd(6000)
        local phases = {
          prepare = 14000 + rnd(3000), ptx = ptx, modkey = 900 + rnd(200),
          stage = 26000 + rnd(4000), resolve = 4200 + rnd(800), lease = 1600 + rnd(400),
          launch = 9000 + rnd(1500), release = 31000 + rnd(5000), readback = 15500 + rnd(2500),
        }
        local named = 0
        pp.begin()
        for _, name in ipairs(pp.default_schema().phases) do
          pp.add_ns(name, phases[name])
          named = named + phases[name]
        end
        pp.add_nested_ns("ptx_digest", math.floor(ptx * 0.55))
        pp.add_nested_ns("ptx_vsa", math.floor(ptx * 0.3))
        pp.counts { nodes = nodes, ptx_bytes = nodes * 310, buffers = 5, bindings = 6, fixpoint = 2,
          grid_blocks = 132 }
        local kernel = 180000 + rnd(20000)
        pp.kernel_ns(kernel, "event", 2800)
        pp.device_window_ns(kernel + phases.resolve + phases.lease + phases.release // 2 + rnd(3000))
        pp.cache("ptx", k == 1 and "miss" or "hit")
        local residue = 5000 + rnd(4000)
        pp.emit { seq = seq, wall_ns = named + residue, enqueue_ns = named - phases.release,
          wait_ns = phases.release + residue }
      end
    end
  end
  pp.tag("shape", nil)
  local records = {}
  for i, r in ipairs(pp.store.records()) do records[i] = r:_table() end
  if opts.start ~= false then
    local t = 7 * 86400 * 1000000000 -- a week of uptime: start_ns well above 10^14
    for _, r in ipairs(records) do
      r.start_ns = t
      t = t + r.wall_ns + 20000 + rnd(30000)
    end
  else
    for _, r in ipairs(records) do r.start_ns = 0 end
  end
  return records
end

--- A record set of the default schema from a list of tables (fields in the
-- schema's order, tags after them) or of records; a set is returned as is.
function M.set(list)
  if recs.is_set(list) then return list end
  local s = pp.default_schema()
  return recs.from_list(list, { prefix = s.prefix, fields = s.fields })
end

return M
