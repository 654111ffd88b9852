-- phaseprobe.dispatch: a reference dispatcher whose every phase is a named,
-- replaceable step that the probe charges.
--
--   local pp = require "phaseprobe"
--   local D  = require "phaseprobe.dispatch"
--   local P  = require "phaseprobe.dispatch.program"
--   pp.enable()
--   local dev = assert(D.cuda_device(0))
--   local d = D.new{ device = dev, knobs = { memo_digest = true } }
--   local prog = P.generate{ nodes = 2000, barriers = 2 }
--   local res = d:dispatch(prog, { n = 2048, inputs = P.inputs(prog, 2048) })
--   print(res.record)             -- one vyre-cuda-dispatch-phase line
--   assert(P.compare(prog, res.outputs, prog:evaluate(P.inputs(prog, 2048), 2048)))
--
-- One dispatch runs the steps of D.PHASES in order, each inside
-- pp.phase(name):
--
--   prepare   validate the program (a whole-program walk), binding plan,
--             launch plan, cooperative flag, fixpoint count
--   ptx       program digest (whole-program walk, nested region ptx_digest)
--             and access fingerprint (nested region ptx_vsa), the PTX cache
--             keyed by both (memory, then disk), lowering on a miss
--   modkey    module key: hash of the 32-byte PTX source key with the
--             device's compute capability
--   stage     buffers from the pool, uploads, output clears, params; then
--             the outer start event (s:window())
--   resolve   geometry and module cache; on a miss load the PTX, get `main`
--             and the barrier counter; co-residency check for cooperative
--             launches; the argument vector
--   lease     grid-barrier detection, barrier markers counted in the PTX,
--             arrival ceiling = markers x grid blocks, the per-module gate
--   launch    per fixpoint iteration: counter reset, then a cooperative or
--             plain launch, inside the inner (kernel-only) event pair
--   release   stream synchronize, counter read back, one-sided arrival
--             audit (arrivals <= ceiling), gate release
--   readback  outer end event, output downloads, the completion wait
--
-- then pp.finish() (wall_ns), w:collect() (device_window_ns, kernel_ns),
-- the counts, and pp.emit: one record per dispatch, written after the
-- timing was captured.
--
-- Swapping a step: d.steps.ptx = function(d, ctx) ... end (the defaults are
-- in D.steps; wrap one by calling it). Smaller seams are methods that an
-- instance may override: d:digest(prog), d:fingerprint(summary),
-- d:lower(prog), d:count_markers(ptx), d:hash(bytes).
--
-- Knobs (d.knobs, or D.new{knobs=}) for what-if runs; every one keeps the
-- results exact:
--   memo_digest  compute a program's digest once (memo keyed by program)
--   cache_scan   count the PTX barrier markers once per module, not per
--                dispatch
--   skip_gate    do not take the per-module gate
--   fixpoint     override the program's fixpoint iteration count
--
-- The device is an object with this interface (D.cuda_device wraps
-- phaseprobe.cuda; a test double can stand in for specs of phase order and
-- caches):
--   dev.kind, dev.name, dev.cc_major, dev.cc_minor, dev.sm_count
--   dev:alloc(bytes) -> buf    buf.ptr, buf.size, buf:upload(array, type),
--                              buf:download(type, n) -> array,
--                              buf:memset(byte, stream), buf:free()
--   dev:load(ptx) -> mod | nil, message
--                              mod:func(name) -> fn (fn:max_active_blocks(block, shared)),
--                              mod:global(name) -> g (g:read_u32(), g:write_u32(v)),
--                              mod:close(), mod.jit_ns
--   dev:stream() -> s          s:synchronize(), s:window() -> w:
--                              w:launch_loop{fn=, grid=, block=, shared=, args=,
--                                iterations=, reset={target=, bytes=}, cooperative=},
--                              w:close(), w:collect() -> device_window_ns, kernel_ns
--   dev:close()
local pp = require "phaseprobe"
local P = require "phaseprobe.dispatch.program"
local lower = require "phaseprobe.dispatch.lower"

local M = {}

M.PHASES = { "prepare", "ptx", "modkey", "stage", "resolve", "lease", "launch", "release", "readback" }
M.NESTED = { "ptx_digest", "ptx_vsa" }
M.MARKER = lower.MARKER
M.COUNTER = lower.COUNTER
M.DEFAULT_BLOCK = 256

local KNOBS = { memo_digest = "boolean", cache_scan = "boolean", skip_gate = "boolean", fixpoint = "number" }
M.KNOB_NAMES = { "memo_digest", "cache_scan", "skip_gate", "fixpoint" }

local fmt = string.format
-- counts as the reports write them: "1 dispatch", "65,536 elements"
local count = require("phaseprobe.output.report").count

-- ---- hashing ----------------------------------------------------------------
local FNV_OFFSET, FNV_PRIME = -3750763034362895579, 0x100000001B3 -- 0xcbf29ce484222325

--- D.hash(bytes) -> 16 hex digits: FNV-1a, 64 bit.
function M.hash(s)
  local h = FNV_OFFSET
  for i = 1, #s, 8 do
    local b1, b2, b3, b4, b5, b6, b7, b8 = s:byte(i, i + 7)
    h = (h ~ b1) * FNV_PRIME
    if b2 then h = (h ~ b2) * FNV_PRIME end
    if b3 then h = (h ~ b3) * FNV_PRIME end
    if b4 then h = (h ~ b4) * FNV_PRIME end
    if b5 then h = (h ~ b5) * FNV_PRIME end
    if b6 then h = (h ~ b6) * FNV_PRIME end
    if b7 then h = (h ~ b7) * FNV_PRIME end
    if b8 then h = (h ~ b8) * FNV_PRIME end
  end
  return fmt("%016x", h)
end

local function mix(h, x, k)
  h = (h ~ x) * k
  return h ~ (h >> 31)
end
local K1, K2 = 0x100000001B3, -7046029254386353131 -- 0x9E3779B97F4A7C15

--- D.digest(prog) -> d1, d2: the normalized program digest, one walk over
--- every node (operation, type, operands, buffer, immediate bits) plus the
--- buffer declarations (type, role). Names do not enter it.
function M.digest(prog)
  local op, ty, a, b, c, buf, key = prog.op, prog.ty, prog.a, prog.b, prog.c, prog.buf, prog.key
  local h1, h2 = 0x243F6A8885A308D3 ~ lower.LOWERING_VERSION, 0x13198A2E03707344 ~ #prog.buffers
  for _, bd in ipairs(prog.buffers) do
    h1 = mix(h1, bd.tcode * 4 + bd.rcode, K1)
  end
  for i = 1, prog.nodes do
    h1 = mix(h1, op[i] | (ty[i] << 5) | (buf[i] << 8) | (a[i] << 16) | (b[i] << 40), K1)
    h2 = mix(h2 ~ h1, c[i] | (key[i] << 24), K2)
  end
  return h1, h2
end

--- D.fingerprint(summary) -> v1, v2: a second walk, over the access summary
--- that validation returns (stage, buffer, shift, kind per distinct access).
function M.fingerprint(summary)
  local v1, v2 = 0x452821E638D01377, 0x0BE5466CF34E90C6 ~ #summary
  for i = 1, #summary, 4 do
    local w = summary[i] | (summary[i + 1] << 12) | (summary[i + 3] << 20) | (summary[i + 2] << 24)
    v1 = mix(v1, w, K2)
    v2 = mix(v2, w ~ v1, K1)
  end
  return v1, v2
end

--- D.count_markers(ptx) -> number of "grid.sync barrier #" markers, with
--- phaseprobe.ptx.count when it is there, else a plain find loop.
function M.count_markers(ptx)
  local count = pp.ptx and pp.ptx.count
  if count then
    return count(ptx, M.MARKER)
  end
  local n, pos = 0, 1
  while true do
    local s, e = ptx:find(M.MARKER, pos, true)
    if not s then return n end
    n, pos = n + 1, e + 1
  end
end

-- ---- the CUDA device ---------------------------------------------------------
local CudaDevice = {}
CudaDevice.__index = CudaDevice

--- D.cuda_device([ordinal]) -> device | nil, why. Wraps phaseprobe.cuda.
function M.cuda_device(ordinal)
  local cu = pp.cuda
  if type(cu) ~= "table" or type(cu.available) ~= "function" then
    return nil, "this phaseprobe.so has no CUDA layer (phaseprobe.cuda.available is missing)"
  end
  local ok, why = cu.available()
  if not ok then
    return nil, why or "CUDA is not available"
  end
  local called, ctx, err = pcall(cu.context, ordinal or 0)
  if not called then return nil, tostring(ctx) end
  if not ctx then return nil, err or "cannot open a CUDA context" end
  return setmetatable({
    kind = "cuda", ctx = ctx, ordinal = ctx.ordinal, name = ctx.name,
    cc_major = ctx.cc_major, cc_minor = ctx.cc_minor, sm_count = ctx.sm_count,
  }, CudaDevice)
end

function CudaDevice:alloc(bytes) return self.ctx:alloc(bytes) end
function CudaDevice:load(ptx) return self.ctx:load(ptx) end
function CudaDevice:stream() return self.ctx:stream() end
function CudaDevice:close()
  if self.ctx.close then self.ctx:close() end
end
function CudaDevice:__tostring()
  return fmt("cuda device %d (%s, sm_%d%d, %s)", self.ordinal or 0, tostring(self.name),
    self.cc_major or 0, self.cc_minor or 0, count(self.sm_count or 0, "SM"))
end

-- ---- the dispatcher ------------------------------------------------------------
local Dispatcher = {}
Dispatcher.__index = Dispatcher
M.Dispatcher = Dispatcher

Dispatcher.digest = function(_, prog) return M.digest(prog) end
Dispatcher.fingerprint = function(_, summary) return M.fingerprint(summary) end
Dispatcher.lower = function(_, prog) return lower.ptx(prog) end
Dispatcher.count_markers = function(_, ptx) return M.count_markers(ptx) end
Dispatcher.hash = function(_, s) return M.hash(s) end

local function check_knobs(knobs, where)
  for k, v in pairs(knobs) do
    local want = KNOBS[k]
    if not want then
      error(fmt("%s: unknown knob '%s' (knobs: %s)", where, tostring(k), table.concat(M.KNOB_NAMES, ", ")), 3)
    end
    if type(v) ~= want then
      error(fmt("%s: knob '%s' must be a %s, got %s", where, k, want, type(v)), 3)
    end
    if k == "fixpoint" and (math.type(v) ~= "integer" or v < 1) then
      error(fmt("%s: knob 'fixpoint' must be a positive integer, got %s", where, tostring(v)), 3)
    end
  end
end

local function check_schema()
  if not pp.enabled() then return end
  local s = pp.schema()
  local have = {}
  for _, name in ipairs(s.phases) do have[name] = true end
  for _, name in ipairs(s.nested) do have["sub:" .. name] = true end
  for _, name in ipairs(M.PHASES) do
    if not have[name] then
      error(fmt("phaseprobe.dispatch: the current schema '%s' has no phase '%s'; "
        .. "use the default schema (pp.use(pp.default_schema()))", s.prefix, name), 3)
    end
  end
  for _, name in ipairs(M.NESTED) do
    if not have["sub:" .. name] then
      error(fmt("phaseprobe.dispatch: the current schema '%s' has no nested region '%s'; "
        .. "use the default schema (pp.use(pp.default_schema()))", s.prefix, name), 3)
    end
  end
end

--- D.new{device=, knobs=, block=256, ptx_cache=, ptx_disk_cache=dir} -> dispatcher
function M.new(o)
  if type(o) ~= "table" then
    error("phaseprobe.dispatch.new: expected an options table", 2)
  end
  local dev = o.device
  if type(dev) ~= "table" or type(dev.alloc) ~= "function" or type(dev.load) ~= "function"
    or type(dev.stream) ~= "function" then
    error("phaseprobe.dispatch.new: 'device' must be a device object (D.cuda_device() or a test double)", 2)
  end
  local knobs = {}
  for k, v in pairs(o.knobs or {}) do knobs[k] = v end
  check_knobs(knobs, "phaseprobe.dispatch.new")
  check_schema()
  local block = o.block or M.DEFAULT_BLOCK
  if math.type(block) ~= "integer" or block < 1 or block > 1024 then
    error(fmt("phaseprobe.dispatch.new: block must be an integer in [1, 1024], got %s", tostring(block)), 2)
  end
  if o.ptx_disk_cache ~= nil and type(o.ptx_disk_cache) ~= "string" then
    error("phaseprobe.dispatch.new: ptx_disk_cache must be a directory path", 2)
  end
  local steps = {}
  for k, v in pairs(M.steps) do steps[k] = v end
  local d = setmetatable({
    device = dev,
    knobs = knobs,
    block = block,
    steps = steps,
    ptx_cache = o.ptx_cache or {},
    ptx_disk_cache = o.ptx_disk_cache,
    modules = {},                                -- module key -> entry
    digest_memo = setmetatable({}, { __mode = "k" }),
    pool = {},                                   -- slot -> device buffer
    stream = dev:stream(),
    seq = 0,
    stats = {
      dispatches = 0, ptx_hits = 0, ptx_misses = 0, ptx_disk_hits = 0, lowerings = 0,
      digest_walks = 0, module_loads = 0, module_hits = 0, marker_scans = 0, gate_acquires = 0,
    },
  }, Dispatcher)
  return d
end

function Dispatcher:__tostring()
  return fmt("phaseprobe.dispatcher (%s; %s, %s)", tostring(self.device.name),
    count(self.seq, "dispatch"), count(self.stats.module_loads, "module"))
end

--- d:set_knobs{...}: replaces the knobs (checked).
function Dispatcher:set_knobs(knobs)
  local k2 = {}
  for k, v in pairs(knobs or {}) do k2[k] = v end
  check_knobs(k2, "dispatcher:set_knobs")
  self.knobs = k2
end

--- d:knob_label() -> "base" or the knobs that are on, joined by "+".
function Dispatcher:knob_label()
  local parts = {}
  for _, k in ipairs(M.KNOB_NAMES) do
    local v = self.knobs[k]
    if v == true then
      parts[#parts + 1] = k
    elseif k == "fixpoint" and v then
      parts[#parts + 1] = "fixpoint" .. v
    end
  end
  return #parts > 0 and table.concat(parts, "+") or "base"
end

local function tag_value(s)
  s = tostring(s):gsub("[^%w%-%+%._:/]", "_")
  if s == "" then s = "_" end
  return s:sub(1, 128)
end

-- ---- the steps -------------------------------------------------------------------
local steps = {}
M.steps = steps

function steps.prepare(d, ctx)
  local prog, args = ctx.program, ctx.args
  ctx.summary = prog:validate()
  -- binding plan
  local n = args.n
  if math.type(n) ~= "integer" or n < 1 or n > 0x7FFFFFFF then
    error(fmt("dispatch '%s': n (the element count) must be an integer in [1, 2^31), got %s",
      prog.name, tostring(n)), 0)
  end
  local inputs = args.inputs or {}
  local bindings = {}
  for i, bd in ipairs(prog.buffers) do
    local data = inputs[bd.name]
    if bd.role ~= "output" then
      if type(data) ~= "table" then
        error(fmt("dispatch '%s': no input data for %s buffer '%s' (args.inputs.%s)",
          prog.name, bd.role, bd.name, bd.name), 0)
      end
      if #data ~= n then
        error(fmt("dispatch '%s': input '%s' has %s, expected n = %s", prog.name, bd.name,
          count(#data, "element"), count(n)), 0)
      end
    end
    bindings[i] = { slot = i, name = bd.name, type = bd.type, role = bd.role, bytes = 4 * n, data = data }
  end
  ctx.bindings = bindings
  ctx.n = n
  -- launch plan
  local block = args.block or d.block
  if math.type(block) ~= "integer" or block < 1 or block > 1024 then
    error(fmt("dispatch '%s': block must be an integer in [1, 1024], got %s", prog.name, tostring(block)), 0)
  end
  ctx.block = block
  ctx.grid = (n + block - 1) // block
  ctx.cooperative = prog.barriers > 0
  local fixpoint = d.knobs.fixpoint or args.fixpoint or prog.fixpoint
  if math.type(fixpoint) ~= "integer" or fixpoint < 1 then
    error(fmt("dispatch '%s': fixpoint must be a positive integer, got %s", prog.name, tostring(fixpoint)), 0)
  end
  ctx.fixpoint = fixpoint
end

local function disk_path(d, key)
  return d.ptx_disk_cache .. "/" .. (key:gsub(".", function(ch) return fmt("%02x", ch:byte()) end)) .. ".ptx"
end

local function disk_read(d, key)
  if not d.ptx_disk_cache then return nil end
  local f = io.open(disk_path(d, key), "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text ~= "" and text or nil
end

local function disk_write(d, key, text)
  if not d.ptx_disk_cache then return end
  local path = disk_path(d, key)
  local tmp = path .. ".tmp"
  local f = io.open(tmp, "wb")
  if not f then return end -- a cache that cannot be written is only slower
  f:write(text)
  f:close()
  os.rename(tmp, path)
end

function steps.ptx(d, ctx)
  local prog = ctx.program
  local d1, d2
  do
    local _ <close> = pp.nested("ptx_digest")
    local memo = d.knobs.memo_digest and d.digest_memo[prog]
    if memo then
      d1, d2 = memo[1], memo[2]
    else
      d1, d2 = d:digest(prog)
      d.stats.digest_walks = d.stats.digest_walks + 1
      if d.knobs.memo_digest then d.digest_memo[prog] = { d1, d2 } end
    end
  end
  local v1, v2
  do
    local _ <close> = pp.nested("ptx_vsa")
    v1, v2 = d:fingerprint(ctx.summary)
  end
  local key = string.pack("<i8i8i8i8", d1, d2, v1, v2)
  ctx.ptx_key = key
  local text = d.ptx_cache[key]
  if text then
    ctx.ptx_cache = "hit"
    d.stats.ptx_hits = d.stats.ptx_hits + 1
  else
    text = disk_read(d, key)
    if text then
      ctx.ptx_cache = "disk_hit"
      d.stats.ptx_disk_hits = d.stats.ptx_disk_hits + 1
    else
      text = d:lower(prog)
      d.stats.lowerings = d.stats.lowerings + 1
      ctx.ptx_cache = "miss"
      d.stats.ptx_misses = d.stats.ptx_misses + 1
      disk_write(d, key, text)
    end
    d.ptx_cache[key] = text
  end
  pp.cache("ptx", ctx.ptx_cache)
  ctx.ptx = text
end

function steps.modkey(d, ctx)
  local dev = d.device
  ctx.modkey = d:hash(ctx.ptx_key .. string.pack("<I4I4", dev.cc_major or 0, dev.cc_minor or 0))
end

local function pooled(d, slot, bytes)
  local b = d.pool[slot]
  if b and b.size == bytes then return b end
  if b then b:free() end
  local nb, err = d.device:alloc(bytes)
  if not nb then
    error(fmt("dispatch: stage: allocating %d bytes for binding %d failed: %s", bytes, slot, tostring(err)), 0)
  end
  d.pool[slot] = nb
  return nb
end

function steps.stage(d, ctx)
  local s = d.stream
  local bufs = {}
  for i, bnd in ipairs(ctx.bindings) do
    local b = pooled(d, i, bnd.bytes)
    bufs[i] = b
    if bnd.role == "output" then
      b:memset(0, s)
    else
      b:upload(bnd.data, bnd.type)
    end
  end
  local params = pooled(d, "params", 16)
  params:upload({ ctx.n, 0, 0, 0 }, "u32")
  bufs[#ctx.bindings + 1] = params
  ctx.bufs = bufs
  ctx.window = s:window()
end

function steps.resolve(d, ctx)
  local dev = d.device
  local entry = d.modules[ctx.modkey]
  if entry then
    d.stats.module_hits = d.stats.module_hits + 1
    ctx.module_cache = "hit"
  else
    local mod, err = dev:load(ctx.ptx)
    if not mod then
      error(fmt("dispatch '%s': resolve: loading the module failed: %s", ctx.program.name, tostring(err)), 0)
    end
    local fn, ferr = mod:func("main")
    if not fn then
      error(fmt("dispatch '%s': resolve: no function 'main': %s", ctx.program.name, tostring(ferr)), 0)
    end
    local counter
    if ctx.cooperative then
      local gerr
      counter, gerr = mod:global(M.COUNTER)
      if not counter then
        error(fmt("dispatch '%s': resolve: no module global '%s': %s", ctx.program.name, M.COUNTER,
          tostring(gerr)), 0)
      end
    end
    entry = { key = ctx.modkey, module = mod, fn = fn, counter = counter, jit_ns = mod.jit_ns,
              max_active = {}, markers = nil, gate = nil }
    d.modules[ctx.modkey] = entry
    d.stats.module_loads = d.stats.module_loads + 1
    ctx.module_cache = "miss"
  end
  ctx.entry = entry
  if ctx.cooperative then
    local per_sm = entry.max_active[ctx.block]
    if not per_sm then
      per_sm = entry.fn:max_active_blocks(ctx.block, 0)
      entry.max_active[ctx.block] = per_sm
    end
    local limit = per_sm * (dev.sm_count or 0)
    if ctx.grid > limit then
      error(fmt("dispatch '%s': resolve: a cooperative launch of %s of %s cannot be co-resident "
        .. "(at most %s per SM x %s = %s); use a smaller n or a larger block",
        ctx.program.name, count(ctx.grid, "block"), count(ctx.block, "thread"),
        count(per_sm, "block"), count(dev.sm_count or 0, "SM"), count(limit)), 0)
    end
  end
  local args = {}
  for i, b in ipairs(ctx.bufs) do args[i] = b.ptr end
  ctx.launch_args = args
end

function steps.lease(d, ctx)
  if not ctx.cooperative then return end
  local entry = ctx.entry
  local markers = d.knobs.cache_scan and entry.markers
  if not markers then
    markers = d:count_markers(ctx.ptx)
    d.stats.marker_scans = d.stats.marker_scans + 1
    if d.knobs.cache_scan then entry.markers = markers end
  end
  if markers == 0 then
    error(fmt("dispatch '%s': lease: the program has grid barriers but its PTX carries no '%s' marker, "
      .. "so no arrival ceiling can be derived", ctx.program.name, M.MARKER), 0)
  end
  ctx.markers = markers
  ctx.ceiling = markers * ctx.grid
  if not d.knobs.skip_gate then
    if entry.gate then
      error(fmt("dispatch '%s': lease: the gate of module %s is held by dispatch %d, which shares its "
        .. "barrier counter", ctx.program.name, entry.key, entry.gate), 0)
    end
    entry.gate = ctx.seq
    ctx.gate = entry
    d.stats.gate_acquires = d.stats.gate_acquires + 1
  end
end

function steps.launch(d, ctx)
  local entry = ctx.entry
  ctx.window:launch_loop{
    fn = entry.fn, grid = ctx.grid, block = ctx.block, shared = 0, args = ctx.launch_args,
    iterations = ctx.fixpoint, cooperative = ctx.cooperative,
    reset = ctx.cooperative and { target = entry.counter, bytes = 4 } or nil,
  }
end

function steps.release(d, ctx)
  d.stream:synchronize()
  if ctx.cooperative then
    local arrivals = ctx.entry.counter:read_u32()
    ctx.arrivals = arrivals
    if arrivals > ctx.ceiling then
      error(fmt("dispatch '%s': release: arrival audit failed: the counter holds %s, above the "
        .. "ceiling of %s x %s = %s", ctx.program.name, count(arrivals, "arrival"),
        count(ctx.markers, "marker"), count(ctx.grid, "block"), count(ctx.ceiling)), 0)
    end
  end
  if ctx.gate then
    ctx.gate.gate = nil
    ctx.gate = nil
  end
end

function steps.readback(d, ctx)
  ctx.window:close()
  ctx.window_closed = true
  local outputs = {}
  for i, bnd in ipairs(ctx.bindings) do
    if bnd.role ~= "input" then
      outputs[bnd.name] = ctx.bufs[i]:download(bnd.type, ctx.n)
    end
  end
  ctx.outputs = outputs
  ctx.t_enqueued = pp.now()
  d.stream:synchronize()
end

-- Runs on every exit of a dispatch: a failed one must not keep the gate.
local guard_mt = {
  __close = function(g)
    local ctx = g.ctx
    if ctx.gate then
      ctx.gate.gate = nil
      ctx.gate = nil
    end
  end,
}

--- d:dispatch(prog, {n=, inputs=, block=, fixpoint=, shape=}) -> result
--- result: outputs (name -> array, for output and inout buffers), record
--- (the emitted record, nil when the probe is off), seq, wall_ns,
--- enqueue_ns, wait_ns, device_window_ns, kernel_ns, ptx_cache ("hit",
--- "miss", "disk_hit"), module_cache ("hit", "miss"), cooperative, grid,
--- block, fixpoint, markers, ceiling, arrivals, ptx_bytes, nodes.
function Dispatcher:dispatch(prog, args)
  if getmetatable(prog) ~= P.Program then
    error("dispatcher:dispatch: argument 1 must be a program from phaseprobe.dispatch.program.new/generate", 2)
  end
  if type(args) ~= "table" then
    error("dispatcher:dispatch: argument 2 must be a table {n=, inputs=, ...}", 2)
  end
  self.seq = self.seq + 1
  local ctx = { program = prog, args = args, seq = self.seq }
  pp.tag("shape", tag_value(args.shape or prog.name))
  pp.tag("knob", tag_value(self:knob_label()))
  local steps_ = self.steps
  local phases = M.PHASES
  local guard <close> = setmetatable({ ctx = ctx }, guard_mt)
  pp.begin()
  local t0 = pp.now()
  for i = 1, #phases do
    local name = phases[i]
    local _ <close> = pp.phase(name)
    steps_[name](self, ctx)
  end
  -- read before pp.finish, as t0 was after pp.begin: enqueue_ns + wait_ns
  -- then lies inside wall_ns by construction
  local t_done = pp.now()
  pp.finish()
  local window_ns, kernel_ns = ctx.window:collect()
  pp.counts{
    nodes = prog.nodes, ptx_bytes = #ctx.ptx, buffers = #prog.buffers, bindings = #ctx.bufs,
    fixpoint = ctx.fixpoint, grid_blocks = ctx.grid,
  }
  local enqueue_ns = (ctx.t_enqueued or t_done) - t0
  local wait_ns = t_done - (ctx.t_enqueued or t_done)
  local rec = pp.emit{ seq = ctx.seq, enqueue_ns = enqueue_ns, wait_ns = wait_ns, device_window_ns = window_ns }
  self.stats.dispatches = self.stats.dispatches + 1
  return {
    outputs = ctx.outputs, record = rec, seq = ctx.seq,
    wall_ns = rec and rec.wall_ns or (t_done - t0), enqueue_ns = enqueue_ns, wait_ns = wait_ns,
    device_window_ns = window_ns, kernel_ns = kernel_ns,
    ptx_cache = ctx.ptx_cache, module_cache = ctx.module_cache,
    cooperative = ctx.cooperative, grid = ctx.grid, block = ctx.block, fixpoint = ctx.fixpoint,
    markers = ctx.markers, ceiling = ctx.ceiling, arrivals = ctx.arrivals,
    ptx_bytes = #ctx.ptx, nodes = prog.nodes, modkey = ctx.modkey,
  }
end

--- d:module_for(modkey) -> the module cache entry for a module key (a
--- dispatch result's modkey): fields module, fn, counter, markers, gate
--- (the seq of the dispatch holding it), or nil.
function Dispatcher:module_for(modkey)
  return self.modules[modkey]
end

--- d:close(): frees the pooled buffers and unloads the modules.
function Dispatcher:close()
  for k, b in pairs(self.pool) do
    b:free()
    self.pool[k] = nil
  end
  for k, e in pairs(self.modules) do
    if e.module.close then e.module:close() end
    self.modules[k] = nil
  end
end

return M
