--- bench/gen_log.lua: a generated log of record lines in the reference's
-- format (the default schema's fields up to ptx_cache_misses), for the
-- command-line benchmarks (bench/cli_scale.lua) and the specs that need a
-- log larger than the fixtures. Nothing here is measured data: the values
-- are made up, shaped like the demo's H200 log (three program sizes; ptx and
-- prepare grow with nodes, the rest is fixed per dispatch with noise; one
-- dispatch in 20,000 is a 7 to 14 ms outlier; a dispatch in 60 misses the
-- ptx cache).
--
--   local gen = dofile("bench/gen_log.lua")
--   gen.write(path, n [, {extra = true, seed = 1, damaged = k}])
--       extra: also our fields (tid, start_ns, probe_ns, kernel_src, ...)
--       and a shape tag; damaged: every k-th line is cut short.
--   lua5.4 bench/gen_log.lua PATH N [extra]
local M = {}

local PREFIX = "vyre-cuda-dispatch-phase"
local SHAPES = { { name = "small", nodes = 48 }, { name = "medium", nodes = 480 },
  { name = "large", nodes = 4800 } }

-- A small deterministic generator (xorshift64*), so runs are repeatable.
local function rng(seed)
  local s = seed * 0x9E3779B97F4A7C15 | 1
  return function()
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    return ((s * 0x2545F4914F6CDD1D) >> 11) / 9007199254740992.0
  end
end

function M.line(i, r, opts)
  local sh = SHAPES[(i - 1) % #SHAPES + 1]
  local nodes = sh.nodes + math.floor(r() * 8)
  local miss = (i % 60 == 1) and 1 or 0
  local function jit(base, spread) return math.floor(base * (1 + spread * (r() - 0.5))) end
  local prepare = jit(20000 + 130 * nodes, 0.3)
  local ptx = jit(miss == 1 and (15000 + 180 * nodes) or 15000 + 2 * nodes, 0.3)
  local modkey = jit(7400, 0.4)
  local stage = jit(250000, 0.3)
  local resolve = jit(7200, 0.4)
  local lease = jit(1200, 0.8)
  local launch = jit(34000, 0.4)
  local release = jit(27000, 0.4)
  local readback = jit(206000, 0.3)
  if i % 20000 == 7 then readback = readback + math.floor(7e6 + 7e6 * r()) end
  local digest = math.floor(ptx * 0.04)
  local vsa = math.floor(ptx * 0.3)
  local named = prepare + ptx + modkey + stage + resolve + lease + launch + release + readback
  local un = jit(3400, 0.6)
  local wall = named + un
  local kernel = jit(18000, 0.5)
  local window = kernel + jit(62000, 0.6)
  local parts = {
    PREFIX, " seq=", i, " nodes=", nodes, " ptx_bytes=", nodes * 47, " buffers=4 bindings=5",
    " fixpoint=", 1 + (i % 3), " grid_blocks=16",
    " wall_ns=", wall, " enqueue_ns=", wall - 2000, " wait_ns=", 2000,
    " device_window_ns=", window, " kernel_ns=", kernel,
    " prepare_ns=", prepare, " ptx_ns=", ptx, " modkey_ns=", modkey, " stage_ns=", stage,
    " resolve_ns=", resolve, " lease_ns=", lease, " launch_ns=", launch,
    " release_ns=", release, " readback_ns=", readback,
    " sub_ptx_digest_ns=", digest, " sub_ptx_vsa_ns=", vsa,
    " named_host_ns=", named, " unattributed_ns=", un,
    " ptx_cache_hits=", 1 - miss, " ptx_cache_misses=", miss,
  }
  if opts.extra then
    local t = opts.t or 0
    parts[#parts + 1] = (" ptx_cache_disk_hits=0 tid=%d start_ns=%d probe_ns=%d kernel_src=event"
      .. " kernel_floor_ns=1312 shape=%s"):format(700 + (i % 2), 91903856443 + t,
      jit(13500, 0.3), sh.name)
    opts.t = t + wall + 5000
  end
  local s = table.concat(parts)
  if opts.damaged and i % opts.damaged == 0 then s = s:sub(1, #s // 2) end
  return s
end

--- Writes n lines to path; returns the byte count.
function M.write(path, n, opts)
  opts = opts or {}
  local r = rng(opts.seed or 1)
  local f = assert(io.open(path, "wb"))
  local buf, bytes = {}, 0
  for i = 1, n do
    local l = M.line(i, r, opts)
    buf[#buf + 1] = l
    bytes = bytes + #l + 1
    if #buf == 4096 then
      f:write(table.concat(buf, "\n"), "\n")
      buf = {}
    end
  end
  if #buf > 0 then f:write(table.concat(buf, "\n"), "\n") end
  f:close()
  return bytes
end

if arg and arg[0] and arg[0]:match("gen_log%.lua$") and arg[1] then
  local bytes = M.write(arg[1], math.tointeger(tonumber(arg[2] or "1000")) or 1000,
    { extra = arg[3] == "extra" })
  io.stderr:write(("%s: %d bytes\n"):format(arg[1], bytes))
end

return M
