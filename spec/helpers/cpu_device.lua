-- A CPU-only test double of the dispatcher's device interface, for the
-- non-GPU specs of phase order and caches. It runs no kernels: output
-- buffers read back as zeros (or whatever was uploaded), and its "device
-- times" are host clock readings. It is never evidence that the GPU path
-- works; the GPU specs (spec/dispatch_gpu_spec.lua) are.
--
-- What it does model: the call sequence (dev.log, one string per call),
-- argument checking against the loaded PTX (parameter count, entry and
-- global names), the barrier counter (each launch adds markers x grid
-- arrivals, as a correct kernel would), and faults to inject:
--   dev.faults.load_fails = "message"   load returns nil, message
--   dev.faults.extra_arrivals = k       each launch adds k arrivals more
--   dev.faults.max_active = b           blocks per SM the occupancy query reports
--   dev.faults.collect_spin_ns = t      collect() busy-waits t ns (host time after the wall)
local pp = require "phaseprobe"

local M = {}

local Device = {}
Device.__index = Device

local function log(dev, what)
  dev.log[#dev.log + 1] = what
end

local Buffer = {}
Buffer.__index = Buffer

function Buffer:upload(data, ty)
  assert(not self.freed, "upload to a freed buffer")
  assert(type(data) == "table" or type(data) == "string", "upload: data must be a table or a string")
  assert(ty == "u32" or ty == "i32" or ty == "f32", "upload: unexpected type " .. tostring(ty))
  assert(type(data) ~= "table" or #data * 4 <= self.size, "upload: data larger than the buffer")
  log(self.dev, "upload")
  self.data = table.move(data, 1, #data, 1, {})
  self.type = ty
end

function Buffer:download(ty, n)
  assert(not self.freed, "download from a freed buffer")
  log(self.dev, "download")
  n = n or self.size // 4
  local out = {}
  for i = 1, n do
    local v = self.data and self.data[i]
    out[i] = v or (ty == "f32" and 0.0 or 0)
  end
  return out
end

function Buffer:memset(byte, stream)
  assert(not self.freed, "memset of a freed buffer")
  assert(byte == 0, "the double only models clears")
  assert(stream ~= nil, "output clears go on the dispatch stream")
  log(self.dev, "memset")
  self.data = nil
end

function Buffer:free()
  if not self.freed then
    log(self.dev, "free")
    self.freed = true
  end
end

local Global = {}
Global.__index = Global
function Global:read_u32()
  log(self.dev, "read_u32")
  return self.value
end
function Global:write_u32(v)
  log(self.dev, "write_u32")
  self.value = v
end

local Func = {}
Func.__index = Func
function Func:max_active_blocks(block, shared)
  assert(math.type(block) == "integer" and shared == 0)
  log(self.dev, "max_active_blocks")
  return self.dev.faults.max_active or 8
end

local Module = {}
Module.__index = Module

function Module:func(name)
  log(self.dev, "func")
  if not self.ptx:find(".entry " .. name .. "(", 1, true) then
    return nil, "no entry '" .. name .. "' in the module"
  end
  return setmetatable({ dev = self.dev, module = self, name = name }, Func)
end

function Module:global(name)
  log(self.dev, "global")
  if not self.ptx:find(" " .. name .. "[", 1, true) then
    return nil, "no global '" .. name .. "' in the module"
  end
  self.counter = self.counter or setmetatable({ dev = self.dev, value = 0, ptr = 0x7000, size = 4 }, Global)
  return self.counter
end

function Module:close()
  log(self.dev, "module_close")
end

local Window = {}
Window.__index = Window

function Window:launch_loop(o)
  local dev = self.dev
  log(dev, "launch_loop")
  assert(not self.closed, "launch_loop on a closed window")
  local fn = o.fn
  assert(getmetatable(fn) == Func, "launch_loop: fn must be a function of a loaded module")
  local params, markers = fn.module.params, fn.module.markers
  assert(#o.args == params, string.format("launch_loop: %d args for %d parameters", #o.args, params))
  for i, a in ipairs(o.args) do
    assert(math.type(a) == "integer", "launch_loop: argument " .. i .. " is not a pointer")
  end
  assert(math.type(o.iterations) == "integer" and o.iterations >= 1, "launch_loop: iterations")
  assert(math.type(o.grid) == "integer" and math.type(o.block) == "integer", "launch_loop: geometry")
  assert((markers > 0) == (o.cooperative == true), "launch_loop: cooperative iff the module has barriers")
  local t0 = pp.now()
  for _ = 1, o.iterations do
    if o.reset then
      assert(o.reset.target == fn.module.counter and o.reset.bytes == 4, "launch_loop: reset target")
      o.reset.target.value = 0
    end
    dev.launches = dev.launches + 1
    if fn.module.counter then
      fn.module.counter.value = fn.module.counter.value + markers * o.grid + (dev.faults.extra_arrivals or 0)
    end
  end
  self.kernel_ns = pp.now() - t0
  self.cooperative = o.cooperative
end

function Window:close()
  log(self.dev, "window_close")
  assert(not self.closed, "window closed twice")
  self.closed = true
  self.window_ns = pp.now() - self.t_open
end

function Window:collect()
  log(self.dev, "collect")
  assert(self.closed, "collect before close")
  local spin = self.dev.faults.collect_spin_ns
  if spin then
    local t0 = pp.now()
    while pp.now() - t0 < spin do end
  end
  local dw, k = self.window_ns, self.kernel_ns or 0
  if pp.enabled() and pp.is_open() then
    pp.device_window_ns(dw)
    pp.kernel_ns(k, "user")
  end
  return dw, k
end

local Stream = {}
Stream.__index = Stream
function Stream:window()
  log(self.dev, "window_open")
  return setmetatable({ dev = self.dev, t_open = pp.now() }, Window)
end
function Stream:synchronize()
  log(self.dev, "synchronize")
end

function Device:alloc(bytes)
  assert(math.type(bytes) == "integer" and bytes > 0, "alloc: bytes")
  log(self, "alloc")
  self.next_ptr = self.next_ptr + ((bytes + 255) // 256) * 256
  return setmetatable({ dev = self, ptr = self.next_ptr, size = bytes }, Buffer)
end

function Device:load(ptx)
  log(self, "load")
  if self.faults.load_fails then
    return nil, self.faults.load_fails
  end
  assert(type(ptx) == "string" and ptx:find(".entry", 1, true), "load: not PTX")
  self.loads = self.loads + 1
  return setmetatable({
    dev = self, ptx = ptx, jit_ns = 0,
    params = select(2, ptx:gsub("%.param %.u64", "")),
    markers = select(2, ptx:gsub("grid%.sync barrier #", "")),
  }, Module)
end

function Device:stream()
  log(self, "stream")
  return setmetatable({ dev = self }, Stream)
end

function Device:close() end

--- cpu_device.new() -> a device double
function M.new()
  return setmetatable({
    kind = "cpu-double", name = "cpu test double (not a GPU)", cc_major = 9, cc_minor = 0, sm_count = 4,
    log = {}, faults = {}, loads = 0, launches = 0, next_ptr = 0x10000,
  }, Device)
end

return M
