-- pp.cuda against the fault-injecting fake driver (build/libfakecuda.so).
--
-- Every case runs in its own interpreter (the driver is loaded once per
-- process) with PHASEPROBE_LIBCUDA pointing at the fake. These specs cover
-- the binding's own logic: error messages, argument packing, the object
-- lifecycle, the window's plumbing into the probe record. The fake never
-- stands for a GPU: spec/cuda_gpu_spec.lua checks the real behaviour.
-- Finding the driver and the driver's own errors, as the binding reports
-- them: spec/cuda_fake_errors_spec.lua. Every chunk here must exit cleanly
-- (helpers/fakecuda.lua).
local fake = require "helpers.fakecuda"
local sub, fake_env, KINDS_PTX = fake.sub, fake.env, fake.KINDS_PTX
local with_ctx = fake.with_ctx

local ready = sub.fake_ready()
local files = require "helpers.files"

-- What the fake wrote to path (nil where it wrote nothing); path removed.
local function taken(path)
  local s = files.read(path)
  os.remove(path)
  return s
end

-- The lines of the fake's launch log at path, one a launch ({} where it
-- logged none); path removed.
local function launches_in(path)
  local lines = {}
  for line in (taken(path) or ""):gmatch("[^\n]+") do
    lines[#lines + 1] = line
  end
  return lines
end

-- with_ctx with the fake's launch log: the results and the lines the fake
-- logged, one a launch.
local function with_ctx_logged(body)
  local log = os.tmpname()
  local r = with_ctx({ PHASEPROBE_FAKE_LOG = log }, body)
  return r, launches_in(log)
end

-- with_ctx with the fake's report at exit: the results and the report.
local function with_ctx_reported(body)
  local path = os.tmpname()
  local r = with_ctx({ PHASEPROBE_FAKE_REPORT = path }, body)
  return r, taken(path)
end

-- The fake's report when every object it handed out was released.
local NOTHING_HELD = "allocs=0 retains=0 modules=0 streams=0 events=0\n"

-- A pointer reported as 16 hex digits, written as the fake logs its bytes:
-- least significant first (the device is little-endian).
local function logged_ptr(hex)
  local swapped = hex:gsub("(%x%x)", "%1 "):reverse():gsub(" ", "")
  return (swapped:gsub("(%x)(%x)", "%2%1"))
end

describe("pp.cuda with the fake driver", function()
  if not ready then
    pending("needs the CUDA headers at build time and build/libfakecuda.so")
    return
  end

  describe("modules and functions", function()
    it("captures JIT logs and times the load", function()
      local r = sub.run(fake_env(), [[
        local ctx = cu.context(0)
        local mod = ctx:load_file("examples/kernels/saxpy.ptx", {jit_log = true})
        report("log", mod.info_log)
        report("jit", math.type(mod.jit_ns), mod.jit_ns > 0, mod.jit_driver_ms)
        report("bytes", mod.ptx_bytes)
      ]])
      assert.are.equal("ptxas info    : fake JIT (verbose)", r.log)
      assert.are.equal("integer | true | 0.5", r.jit)
      local ptx = files.read("examples/kernels/saxpy.ptx")
      assert.are.equal(tostring(#ptx), r.bytes)
    end)

    it("reads the parameter layout from the PTX entry", function()
      local r = with_ctx({}, [[
        local fn = mod:func("kinds")
        report("src", fn.param_source, fn.param_bytes)
        for i, p in ipairs(fn.params) do
          report("p" .. i, p.offset, p.size, p.type, p.name)
        end
        report("attrs", fn.registers, fn.max_threads, fn.shared_bytes)
        report("noargs", #mod:func("noargs").params)
      ]])
      assert.are.equal("ptx | 48", r.src)
      assert.are.equal("0 | 1 | u8 | kinds_param_0", r.p1)
      assert.are.equal("4 | 4 | s32 | kinds_param_1", r.p2)
      assert.are.equal("8 | 8 | f64 | kinds_param_2", r.p3)
      assert.are.equal("16 | 4 | b32 | kinds_param_3", r.p4)
      assert.are.equal("24 | 12 | b8 | kinds_param_4", r.p5)
      assert.are.equal("40 | 8 | u64 | kinds_param_5", r.p6)
      assert.are.equal("32 | 1024 | 0", r.attrs)
      assert.are.equal("0", r.noargs)
    end)

    it("takes offsets from cuFuncGetParamInfo where the driver has it", function()
      local r = with_ctx({ PHASEPROBE_FAKE_FAULTS = "paraminfo" }, [[
        report("info", cu.driver().param_info)
        local fn = mod:func("kinds")
        report("src", fn.param_source)
        report("p5", fn.params[5].offset, fn.params[5].size, fn.params[5].type)
      ]])
      assert.are.equal("true", r.info)
      assert.are.equal("driver+ptx", r.src)
      assert.are.equal("24 | 12 | b8", r.p5)
    end)

    it("reads and writes module globals", function()
      local r = with_ctx({}, [[
        local g = mod:global("counter")
        report("g", g.name, g.size, g.ptr > 0)
        g:write_u32(0xdeadbeef)
        report("u32", g:read_u32())
        local b = mod:global("blob")
        b:write("abc", 5)
        report("blob", #b:read(), b:read(3, 5))
        try("range", b.write, b, string.rep("x", 20), 10)
        try("u32range", g.write_u32, g, -1)
      ]])
      assert.are.equal("counter | 4 | true", r.g)
      assert.are.equal(tostring(0xdeadbeef), r.u32)
      assert.are.equal("24 | abc", r.blob)
      assert.matches("20 bytes at offset 10 do not fit in 24 bytes", r.range)
      assert.matches("not a u32", r.u32range)
    end)
  end)

  describe("launch arguments", function()
    it("packs each parameter by its PTX type and size", function()
      local r, lines = with_ctx_logged [[
        local fn = mod:func("kinds")
        local buf = ctx:alloc(64)
        report("ptr", string.format("%016x", buf.ptr))
        fn:launch{grid = {2, 1, 1}, block = {8, 4}, shared = 64,
                  args = {255, -2, 0.5, 1.5, "ABCDEFGHIJKL", buf}}
        fn:launch{grid = 1, block = 1, args = {true, 7, 3, 7, "............", 4096}}
        local g = mod:global("counter")
        fn:launch{grid = 1, block = 1, args = {0, 0, 0, 0, "............", g}}
        report("gptr", string.format("%016x", g.ptr))
      ]]
      assert.are.equal(3, #lines, r._output)
      local ptr = logged_ptr(r.ptr)
      assert.are.equal("launch kinds grid=2,1,1 block=8,4,1 shared=64 coop=0 "
        .. "params=ff,feffffff,000000000000e03f,0000c03f,"
        .. "4142434445464748494a4b4c," .. ptr, lines[1])
      assert.are.equal("launch kinds grid=1,1,1 block=1,1,1 shared=0 coop=0 "
        .. "params=01,07000000,0000000000000840,07000000,"
        .. "2e2e2e2e2e2e2e2e2e2e2e2e,0010000000000000", lines[2])
      assert.matches("," .. logged_ptr(r.gptr) .. "$", lines[3])
    end)

    it("packs a block of any size, from a plain table or one read through __index", function()
      -- 4 + 1000 bytes do not fit the description's own 512-byte block:
      -- those arguments go to a userdata; the small ones stay inline
      local r, lines = with_ctx_logged [[
        local big = ctx:load(".version 8.0\n.target sm_90\n.address_size 64\n"
          .. ".visible .entry big(.param .u32 big_n, .param .align 8 .b8 big_b[1000])\n{\n  ret;\n}\n")
          :func("big")
        local blob = ("\1\2\3\4"):rep(250)
        big:launch{ grid = 1, block = 1, args = { 7, blob } }
        big:launch(setmetatable({ args = { 8, blob } }, { __index = { grid = 2, block = 3 } }))
        local small = mod:func("kinds")
        small:launch(setmetatable({ block = 1 }, { __index = function(_, k)
          if k == "grid" then return 4 end
          if k == "args" then return { 1, 2, 3, 4, "............", 5 } end
        end }))
        local w = ctx.stream:window()
        report("loop", w:launch_loop(setmetatable({}, { __index = { fn = big, grid = 1, block = 1,
          args = { 9, blob } } })) ~= nil)
        w:close()
        report("collect", w:collect() ~= nil)
      ]]
      assert.are.equal(4, #lines, r._output)
      local hex = ("01020304"):rep(250)
      assert.are.equal("launch big grid=1,1,1 block=1,1,1 shared=0 coop=0 params=07000000," .. hex, lines[1])
      assert.are.equal("launch big grid=2,1,1 block=3,1,1 shared=0 coop=0 params=08000000," .. hex, lines[2])
      assert.matches("^launch kinds grid=4,1,1 block=1,1,1 shared=0 coop=0 params=01,02000000,", lines[3])
      assert.are.equal("launch big grid=1,1,1 block=1,1,1 shared=0 coop=0 params=09000000," .. hex, lines[4])
      assert.are.equal("true", r.loop)
      assert.are.equal("true", r.collect)
    end)

    it("names the parameter on a wrong count or type", function()
      local r = with_ctx({}, [[
        local fn = mod:func("kinds")
        local buf = ctx:alloc(8)
        try("count", fn.launch, fn, {grid = 1, block = 1, args = {1, 2}})
        try("range", fn.launch, fn,
            {grid = 1, block = 1, args = {256, 0, 0, 0, "............", buf}})
        try("float", fn.launch, fn,
            {grid = 1, block = 1, args = {1, 2.5, 0, 0, "............", buf}})
        try("ptr", fn.launch, fn,
            {grid = 1, block = 1, args = {1, 2, buf, 0, "............", buf}})
        try("bytes", fn.launch, fn,
            {grid = 1, block = 1, args = {1, 2, 3, 4, "short", buf}})
        try("table", fn.launch, fn,
            {grid = 1, block = 1, args = {1, 2, 3, 4, "............", {}}})
        try("grid", fn.launch, fn, {grid = 0, block = 1, args = {}})
        try("field", fn.launch, fn, {grid = 1, block = 1, blocks = 2, args = {}})
        try("noargs", mod:func("noargs").launch, mod:func("noargs"),
            {grid = 1, block = 1, args = {1}})
      ]])
      assert.are.equal("error: fn:launch: 'kinds' expects 6 arguments "
        .. "(kinds_param_0 .u8, kinds_param_1 .s32, kinds_param_2 .f64, "
        .. "kinds_param_3 .b32, kinds_param_4 .b8, kinds_param_5 .u64), got 2",
        r.count)
      assert.matches("'kinds' argument 1 %('kinds_param_0', %.u8%) expects an "
        .. "integer that fits in 8 bits, got 256", r.range)
      assert.matches("argument 2 %('kinds_param_1', %.s32%) expects an integer "
        .. "that fits in 32 bits, got 2%.5", r.float)
      assert.matches("argument 3 %('kinds_param_2', %.f64%) expects a %.f64 value, "
        .. "got phaseprobe%.cuda%.buffer", r.ptr)
      assert.matches("argument 5 %('kinds_param_4', %.b8%) expects a string of "
        .. "exactly 12 bytes, got string", r.bytes)
      assert.matches("argument 6 %('kinds_param_5', %.u64%) expects an integer, "
        .. "a buffer or a global, got table", r.table)
      assert.matches("field 'grid' must be a positive integer", r.grid)
      assert.matches("fn:launch: unknown field 'blocks'", r.field)
      assert.matches("'noargs' expects 0 arguments %(%), got 1", r.noargs)
    end)

    it("refuses memory of another context and closed buffers", function()
      local r = with_ctx({}, [[
        local ctx2 = cu.context(0)
        local other = ctx2:alloc(16)
        local x = ctx:alloc(16)
        try("other", saxpy.launch, saxpy,
            {grid = 1, block = 1, args = {1, 1.0, x, other}})
        x:free()
        try("freed", saxpy.launch, saxpy,
            {grid = 1, block = 1, args = {1, 1.0, x, x}})
      ]])
      assert.matches("expects memory of the function's context", r.other)
      assert.matches("closed buffer", r.freed)
    end)
  end)

  describe("cooperative launches", function()
    it("checks residency before launching", function()
      local r, launches = with_ctx_logged [[
        local x = ctx:alloc(16)
        report("occ", saxpy:max_active_blocks(256), saxpy:max_active_blocks(1024))
        saxpy:launch{grid = 32, block = 256, cooperative = true,
                      args = {1, 1.0, x, x}}
        try("big", saxpy.launch, saxpy,
            {grid = 33, block = 256, cooperative = true, args = {1, 1.0, x, x}})
      ]]
      assert.are.equal("8 | 2", r.occ)
      assert.are.equal("error: fn:launch: cooperative launch of 'saxpy' does not "
        .. "fit: grid of 33 blocks, at most 32 co-resident (4 SMs x 8 blocks per "
        .. "SM at 256 threads a block, 0 bytes of dynamic shared memory)", r.big)
      assert.are.equal(1, #launches, r._output)
      assert.matches("grid=32,1,1 block=256,1,1 shared=0 coop=1", launches[1])
    end)
  end)

  describe("buffers", function()
    it("round-trips every element type and checks ranges", function()
      local r = with_ctx({}, [[
        local b = ctx:alloc(64)
        b:memset(0)
        local cases = {
          u8 = {0, 1, 255}, i32 = {-2147483648, 0, 2147483647},
          u32 = {0, 4294967295}, i64 = {math.mininteger, -1, math.maxinteger},
          u64 = {0, 1 << 62}, f32 = {0.5, -1.25, 3e38}, f64 = {0.1, -2.5e300},
        }
        for _, t in ipairs{"u8", "i32", "u32", "i64", "u64", "f32", "f64"} do
          local v = cases[t]
          b:upload(v, t)
          report(t, table.concat(b:download(t, #v), ","))
        end
        b:upload("xyz", 10)
        report("bytes", b:download(nil, 3, 10))
        report("size", b.size, #b:download())
        try("e_u8", b.upload, b, {1, 300}, "u8")
        try("e_u32", b.upload, b, {-1}, "u32")
        try("e_f32", b.upload, b, {1, "x"}, "f32")
        try("notype", b.upload, b, {1})
        try("fit", b.upload, b, string.rep("a", 65))
        try("badtype", b.download, b, "f16")
        b:memset(7)
        report("memset", table.concat(b:download("u8", 4), ","))
        b:memset(9, ctx.stream)
        report("memset_async", b:download("u8", 1)[1])
      ]])
      assert.are.equal("0,1,255", r.u8)
      assert.are.equal("-2147483648,0,2147483647", r.i32)
      assert.are.equal("0,4294967295", r.u32)
      assert.are.equal(("%d,-1,%d"):format(math.mininteger, math.maxinteger), r.i64)
      assert.are.equal("0," .. (1 << 62), r.u64)
      local f3 = string.unpack("f", string.pack("f", 3e38))
      assert.are.equal("0.5,-1.25," .. tostring(f3), r.f32)
      assert.are.equal("0.1,-2.5e+300", r.f64)
      assert.are.equal("xyz", r.bytes)
      assert.are.equal("64 | 64", r.size)
      assert.matches("element 2 must be an integer in 0%.%.255 for type u8, got 300", r.e_u8)
      assert.matches("element 1 must be an integer in 0%.%.4294967295 for type u32", r.e_u32)
      assert.matches("element 2 must be a number for type f32, got x", r.e_f32)
      assert.matches("element type required", r.notype)
      assert.matches("65 bytes at offset 0 do not fit", r.fit)
      assert.matches("invalid option 'f16'", r.badtype)
      assert.are.equal("7,7,7,7", r.memset)
      assert.are.equal("9", r.memset_async)
    end)

    it("does not leak over 10k alloc/free cycles", function()
      local r = with_ctx({}, [[
        local free0 = ctx:mem_info()
        for i = 1, 10000 do
          local b = ctx:alloc(4096)
          if i % 2 == 0 then b:free() end
        end
        collectgarbage()
        collectgarbage()
        local free1, total = ctx:mem_info()
        report("mem", free0 == free1, total)
      ]])
      assert.are.equal("true | 268435456", r.mem)
    end)
  end)

  describe("handles", function()
    it("answer each of their fields with the value behind it", function()
      local r = with_ctx({}, [[
        report("ctx", ctx.ordinal, ctx.name, ctx.cc_major, ctx.cc_minor, ctx.sm_count,
          ctx.cooperative, math.type(ctx.event_floor_ns), ctx.usable)
        local f = mod:func("kinds")
        report("fn", f.name, f.registers, f.shared_bytes, f.max_threads, f.local_bytes,
          f.const_bytes, f.param_bytes, f.param_source)
        local g = mod:global("blob")
        report("global", g.name, g.size, math.type(g.ptr), g.ptr ~= 0)
        local b = ctx:alloc(48)
        report("buf", b.size, math.type(b.ptr), b.ptr ~= 0, b.context == ctx)
        report("mod", math.type(mod.jit_ns), mod.jit_driver_ms, mod.context == ctx)
        local w = ctx.stream:window()
        w:launch_loop { fn = mod:func("noargs"), grid = 1, block = 1, iterations = 3 }
        w:close()
        w:collect()
        report("window", w.iterations, w.stage, math.type(w.loop_host_ns), w.loop_host_ns > 0,
          math.type(w.lead_ns), w.floor_ns == ctx.event_floor_ns, w.probe_ns > 0)
      ]])
      assert.are.equal("0 | phaseprobe fake device | 9 | 0 | 4 | true | integer | true", r.ctx, r._output)
      assert.are.equal("kinds | 32 | 0 | 1024 | 0 | 0 | 48 | ptx", r.fn)
      assert.are.equal("blob | 24 | integer | true", r.global)
      assert.are.equal("48 | integer | true | true", r.buf)
      assert.are.equal("integer | 0.5 | true", r.mod)
      assert.are.equal("3 | collected | integer | true | integer | true | true", r.window)
    end)

    it("raise a clear error once released", function()
      local r = with_ctx({}, [[
        local b = ctx:alloc(16)
        b:free()
        b:free()
        try("buf", b.download, b)
        try("ptr", function() return b.ptr end)
        report("closed", b.closed, tostring(b))
        local s = ctx:stream()
        s:close()
        try("stream", s.synchronize, s)
        local f = mod:func("noargs")
        f:close()
        try("fn", f.launch, f, {grid = 1, block = 1, args = {}})
        local g = mod:func("kinds")
        mod:close()
        try("mod", g.launch, g, {grid = 1, block = 1, args = {}})
        try("modfn", mod.func, mod, "kinds")
        report("names", getmetatable(b).__name, getmetatable(s).__name,
               getmetatable(ctx).__name)
        try("nofield", function() return ctx.bogus end)
        report("streams", ctx.stream.default, ctx:stream().default,
               ctx.stream == ctx.stream)
        try("call", function() return ctx:stream()(ctx) end)
      ]])
      assert.are.equal("true | false | true", r.streams)
      assert.matches("a stream is not callable", r.call)
      assert.matches("bad argument #1 to .* %(closed buffer%)", r.buf)
      assert.matches("closed buffer", r.ptr)
      assert.are.equal("true | phaseprobe.cuda.buffer (freed)", r.closed)
      assert.matches("closed stream", r.stream)
      assert.matches("closed function", r.fn)
      assert.matches("closed module", r.mod)
      assert.matches("closed module", r.modfn)
      assert.are.equal("phaseprobe.cuda.buffer | phaseprobe.cuda.stream | "
        .. "phaseprobe.cuda.context", r.names)
      assert.matches("has no field 'bogus'", r.nofield)
    end)

    it("release everything: explicit, <close>, garbage collected, at exit", function()
      local r, rep = with_ctx_reported [[
        do
          local b <close> = ctx:alloc(16)
          local s <close> = ctx:stream()
          local w <close> = s:window()
        end
        for i = 1, 100 do ctx:alloc(8); ctx:stream() end
        local keep = ctx:alloc(32)
        local s = ctx:stream()
        local w = s:window()
        ctx:close()
        try("closedctx", keep.upload, keep, "x")
        report("ctxclosed", ctx.closed)
        collectgarbage()
      ]]
      assert.matches("closed context", r.closedctx)
      assert.are.equal("true", r.ctxclosed)
      assert.are.equal(NOTHING_HELD, rep, r._output)
    end)

    it("keep a context's driver state until its last child is released", function()
      local r, rep = with_ctx_reported [[
        local b = ctx:alloc(16)
        ctx:close()
        b:free()
        report("freed", b.closed)
        saxpy_mod:close()
        mod:close()
        collectgarbage()
        os.exit(0, false)  -- skip lua_close: only explicit releases count
      ]]
      assert.are.equal("true", r.freed)
      assert.are.equal(NOTHING_HELD, rep, r._output)
    end)
  end)

  describe("the timed window", function()
    it("records both figures into the open dispatch", function()
      local r = with_ctx({}, [[
        pp.enable()
        pp.sink("none")
        local x = ctx:alloc(16)
        local s = ctx:stream()
        pp.begin()
        local w = s:window()
        w:spin_us(300)
        local host = w:launch_loop{fn = saxpy, grid = 1, block = 4,
                                   args = {4, 1.0, x, x}, iterations = 3}
        w:close()
        s:synchronize()
        local dw, k = w:collect()
        local rec = pp.emit()
        report("figs", dw == rec.device_window_ns, k == rec.kernel_ns,
               rec.kernel_src, rec.kernel_floor_ns == ctx.event_floor_ns)
        report("gap", dw - k >= 300000, dw >= k)
        report("probe", rec.probe_ns > 0, w.probe_ns > 0, host > 0,
               w.iterations, w.stage)
        try("again", w.collect, w)
      ]])
      assert.are.equal("true | true | event | true", r.figs, r._output)
      assert.are.equal("true | true", r.gap)
      assert.are.equal("true | true | true | 3 | collected", r.probe)
      assert.matches("closed window", r.again)
    end)

    it("resets the target before each launch and enforces the order", function()
      local r, launches = with_ctx_logged [[
        local x = ctx:alloc(16)
        local g = mod:global("counter")
        g:write_u32(5)
        local s = ctx.stream
        local w = s:window()
        try("early", w.collect, w)
        w:launch_loop{fn = saxpy, grid = 1, block = 1, args = {1, 1.0, x, x},
                      iterations = 4, reset = {target = g, bytes = 4, value = 0}}
        report("counter", g:read_u32())
        try("twice", w.launch_loop, w, {fn = saxpy, grid = 1, block = 1,
                                        args = {1, 1.0, x, x}})
        w:close()
        w:close()
        local dw, k = w:collect()
        report("kinds", math.type(dw), math.type(k))
        local w2 = s:window()
        w2:close()
        local a, b = w2:collect()
        report("noloop", math.type(a), b)
        local w3 = s:window()
        try("badreset", w3.launch_loop, w3,
            {fn = saxpy, grid = 1, block = 1, args = {1, 1.0, x, x},
             reset = {target = g, bytes = 8}})
        report("timed", s:timed{fn = saxpy, grid = 1, block = 1, spin_us = 50,
                                args = {1, 1.0, x, x}, iterations = 2})
      ]]
      assert.matches("close the window first", r.early)
      assert.are.equal("0", r.counter)
      assert.matches("the loop already ran in this window", r.twice)
      assert.are.equal("integer | integer", r.kinds)
      assert.are.equal("integer | nil", r.noloop)
      assert.matches("field 'bytes' must be an integer in 0%.%.4, got 8", r.badreset)
      assert.matches("^%d+ | %d+$", r.timed)
      assert.are.equal(6, #launches, r._output)
    end)
  end)

  describe("a prepared launch", function()
    it("launches window after window what its description would, with what it points into kept alive", function()
      local r, launches = with_ctx_logged [[
        local x = ctx:alloc(16)
        local g = mod:global("counter")
        g:write_u32(5)
        local s = ctx.stream
        local w = s:window()
        w:launch_loop{fn = saxpy, grid = 2, block = 4, args = {4, 1.5, x, x},
                      iterations = 2, reset = {target = g, bytes = 4, value = 0}}
        w:close(); w:collect()
        local p = saxpy:prepare{grid = 2, block = 4, args = {4, 1.5, x, x},
                                iterations = 2, reset = {target = g, bytes = 4, value = 0}}
        x = nil -- kept by p
        collectgarbage(); collectgarbage()
        report("str", tostring(p))
        report("fields", p.fn == saxpy, p.iterations, p.spin_us)
        for i = 1, 2 do
          g:write_u32(7)
          local w2 = s:window()
          report("host" .. i, math.type(w2:launch_loop(p)))
          report("counter" .. i, g:read_u32())
          w2:close(); w2:collect()
        end
        local big = ctx:load(".version 8.0\n.target sm_90\n.address_size 64\n"
          .. ".visible .entry big(.param .u32 big_n, .param .align 8 .b8 big_b[1000])\n{\n  ret;\n}\n")
          :func("big")
        local pb = big:prepare{grid = 1, block = 1, args = {9, ("\1\2\3\4"):rep(250)}}
        collectgarbage(); collectgarbage()
        local w3 = s:window()
        w3:launch_loop(pb)
        w3:close(); w3:collect()
        try("field", saxpy.prepare, saxpy, {grid = 1, block = 1, stream = s, args = {}})
        try("nofield", function() return p.grid end)
      ]]
      assert.are.equal("phaseprobe.cuda.launch of 'saxpy' (grid=2x1x1 block=4x1x1 shared=0)", r.str)
      assert.are.equal("true | 2 | 0.0", r.fields)
      assert.are.equal("integer", r.host1)
      assert.are.equal("integer", r.host2)
      assert.are.equal("0", r.counter1) -- the reset ran before the launches
      assert.are.equal("0", r.counter2)
      assert.are.equal(7, #launches, r._output)
      for i = 3, 6 do assert.are.equal(launches[1], launches[i]) end
      assert.are.equal("launch big grid=1,1,1 block=1,1,1 shared=0 coop=0 params=09000000,"
        .. ("01020304"):rep(250), launches[7])
      assert.matches("unknown field 'stream'", r.field)
      assert.matches("phaseprobe.cuda.launch has no field 'grid'", r.nofield)
    end)

    it("checks the memory it packed, even from a description whose __index answers anew each time", function()
      local r, launches = with_ctx_logged [[
        local x, y = ctx:alloc(16), ctx:alloc(16)
        local reads = 0
        local desc = setmetatable({}, { __index = function(_, k)
          if k == "grid" or k == "block" then return 1 end
          if k == "args" then
            reads = reads + 1
            return reads == 1 and { 1, 1.0, x, x } or { 1, 1.0, y, y }
          end
        end })
        local p = saxpy:prepare(desc)
        x:free()
        local w = ctx.stream:window()
        try("freed", w.launch_loop, w, p)
        w:close(); w:collect()
      ]]
      assert.matches("argument 3 of the prepared launch of 'saxpy' %(a buffer%) was closed", r.freed)
      assert.are.equal(0, #launches, r._output)
    end)

    it("refuses a function, memory or context closed after it was prepared", function()
      local r, launches = with_ctx_logged [[
        local s = ctx.stream
        local function loop(p)
          local w = s:window()
          local ok, err = pcall(w.launch_loop, w, p)
          w:close(); w:collect()
          return ok or err
        end
        local x = ctx:alloc(16)
        local p = saxpy:prepare{grid = 1, block = 1, args = {1, 1.0, x, x}}
        x:free()
        report("buffer", loop(p))
        local g = mod:global("counter")
        local pg = saxpy:prepare{grid = 1, block = 1, args = {1, 1.0, ctx:alloc(8), ctx:alloc(8)},
                                 reset = {target = g, bytes = 4}}
        report("ok", loop(pg))
        mod:close()
        report("global", loop(pg))
        local m2 = ctx:load_file("examples/kernels/saxpy.ptx")
        local f2 = m2:func("saxpy")
        local p2 = f2:prepare{grid = 1, block = 1, args = {1, 1.0, ctx:alloc(8), ctx:alloc(8)}}
        m2:close()
        report("module", loop(p2))
        local ctx2 = assert(cu.context(0))
        local m3 = ctx2:load_file("examples/kernels/saxpy.ptx")
        local p3 = m3:func("saxpy"):prepare{grid = 1, block = 1, args = {1, 1.0, ctx2:alloc(8), ctx2:alloc(8)}}
        report("other", loop(p3))
        ctx2:close()
        local w = ctx.stream:window()
        try("closedctx", w.launch_loop, w, p3)
        w:close(); w:collect()
      ]]
      assert.matches("argument 3 of the prepared launch of 'saxpy' %(a buffer%) was closed after the launch was prepared", r.buffer)
      assert.are.equal("true", r.ok)
      assert.matches("the reset target of the prepared launch of 'saxpy' was closed", r.global)
      assert.matches("the prepared launch's function 'saxpy' is closed %(its module was unloaded%)", r.module)
      assert.matches("the function belongs to another context", r.other)
      assert.matches("closed", r.closedctx)
      assert.are.equal(1, #launches, r._output)
    end)
  end)

  describe("a handle closed by a finalizer while its own call runs", function()
    -- Any allocation may run pending finalizers, and one of them may close
    -- the handle whose method is running, or the context, module, buffer
    -- or stream that method uses. The method must then refuse ("closed
    -- ...") or finish on what it had: never hand the driver a released
    -- context, a function of an unloaded module, a freed buffer or a
    -- destroyed stream. The fake refuses those as a driver would, so they
    -- show here as driver errors (and a freed event pool as a crash).
    local HARNESS = [=[
      -- The close is armed to come at a varying allocation inside the call:
      -- a finalizer that re-arms itself once runs at the end of the second
      -- GC cycle, which (with the collector stepping at every allocation)
      -- takes about as many allocations as cycle() measures just before;
      -- a round makes about that many first, less k (k = 0..27), so the
      -- close comes before the call or around its k-th small allocation.
      local function arm(fin)
        setmetatable({}, { __gc = function() setmetatable({}, { __gc = fin }) end })
      end
      local keep = {}
      local function churn(n) for i = 1, n do keep[i % 8 + 1] = { i } end end
      local function cycle()
        local done, n = false, 0
        collectgarbage()
        arm(function() done = true end)
        collectgarbage("incremental", 0, 1000, 0)
        while not done and n < 100000 do n = n + 1; churn(1) end
        collectgarbage("incremental", 200, 100, 13)
        return n
      end
      -- closing(name, make, call [, close]): 200 rounds of make() -> target,
      -- args; a close of the target armed as above; call(target, args...).
      -- Reports name: bad, fine (done, or refused as closed), whether a
      -- close ever came inside the call.
      function closing(name, make, call, close)
        close = close or function(t) t:close() end
        local fine, bad, inside = 0, 0, 0
        for round = 1, 200 do
          local target, a, b = make()
          local closed = false
          local n = cycle()
          collectgarbage()
          arm(function() close(target); closed = true end)
          collectgarbage("incremental", 0, 1000, 0)
          churn(math.max(0, n + 2 - round % 28))
          local before = closed
          local ok, res = pcall(call, target, a, b)
          if closed and not before then inside = inside + 1 end
          collectgarbage("incremental", 200, 100, 13)
          local msg = tostring(res)
          if (ok and res ~= false) or (not ok and msg:find("closed") and not msg:find("CUDA_ERROR")) then
            fine = fine + 1
          else
            bad = bad + 1
            if bad <= 2 then report(name .. "_bad" .. bad, msg) end
          end
          close(target)
        end
        collectgarbage()
        report(name, bad, fine, inside > 0)
      end
    ]=]

    local function closing_run(body)
      local r = sub.run(fake_env(), ("PTX = %q\n"):format(KINDS_PTX) .. HARNESS .. body)
      return r
    end

    -- every round fine; the close came inside the call in some rounds,
    -- except for the calls that allocate nothing (those named in quiet)
    local function all_fine(r, names, quiet)
      local calm = {}
      for _, name in ipairs(quiet or {}) do calm[name] = true end
      for _, name in ipairs(names) do
        assert.are.equal("0 | 200", (r[name] or ""):match("^%d+ | %d+"), name .. ":\n" .. r._output)
        if not calm[name] then
          assert.are.equal("true", r[name]:match("| (%a+)$"), name .. ":\n" .. r._output)
        end
      end
    end

    it("context methods: alloc, load, stream, window, event_costs, calibrate_events", function()
      all_fine(closing_run([[
        local function ctx() return assert(cu.context(0)) end
        closing("alloc", ctx, function(c) return c:alloc(64).size == 64 end)
        closing("load", ctx, function(c) return c:load(PTX):func("noargs") ~= nil end)
        closing("stream", ctx, function(c) return not c:stream().closed end)
        closing("window", ctx, function(c) local w = c.stream:window(); w:close(); return true end)
        closing("event_costs", ctx, function(c) return #c:event_costs(4).pair == 4 end)
        closing("calibrate", ctx, function(c) return c:calibrate_events{ samples = 4, source = "event" } > 0 end)
      ]]), { "alloc", "load", "stream", "window", "event_costs", "calibrate" })
    end)

    it("module methods and what runs on its functions and globals", function()
      all_fine(closing_run([[
        local c = assert(cu.context(0))
        -- a global larger than luaL_Buffer's own room, so reading it allocates
        local BIG = PTX:gsub("%.visible %.global %.align 8 %.b8 blob%[24%];", "%0\n.visible .global .align 8 .b8 big[4096];")
        local function mod() return c:load(BIG) end
        closing("func", mod, function(m) return m:func("kinds").registers == 32 end)
        closing("global", mod, function(m) return m:global("blob").size == 24 end)
        closing("global_read", function() local m = mod(); return m, m:global("big") end,
          function(_, g) return #g:read() == 4096 end)
        closing("global_write", function() local m = mod(); return m, m:global("counter") end,
          function(_, g) g:write(7); return true end)
        closing("launch", function() local m = mod(); return m, m:func("noargs") end,
          function(_, fn) fn:launch { grid = 1, block = 1 }; return true end)
        closing("blocks", function() local m = mod(); return m, m:func("noargs") end,
          function(_, fn) return fn:max_active_blocks(32) > 0 end)
      ]]), { "func", "global", "global_read", "global_write", "launch", "blocks" },
        -- a write of a scalar allocates once at most, so whether a close
        -- ever falls inside it hangs on the heap's size: checked fine only
        { "blocks", "global_write" })
    end)

    it("buffer methods and launches that take a buffer", function()
      all_fine(closing_run([[
        local c = assert(cu.context(0))
        local kinds = c:load(PTX):func("kinds")
        local function buf() return c:alloc(64) end
        closing("upload", buf, function(b) b:upload({ 1, 2, 3, 4 }, "u32"); return true end)
        closing("upload_bytes", buf, function(b) b:upload("12345678", 8); return true end)
        closing("download", buf, function(b) return #b:download("u32") == 16 end)
        closing("download_bytes", buf, function(b) return #b:download() == 64 end)
        closing("memset", buf, function(b) b:memset(1); return true end)
        closing("launch_arg", buf, function(b)
          kinds:launch { grid = 1, block = 1, args = { 1, -2, 2.5, 7, ("z"):rep(12), b } }
          return true
        end)
      ]]), { "upload", "upload_bytes", "download", "download_bytes", "memset", "launch_arg" },
        { "upload_bytes", "memset" })
    end)

    it("stream methods, launches on a stream and the window's steps", function()
      all_fine(closing_run([[
        local c = assert(cu.context(0))
        local noargs = c:load(PTX):func("noargs")
        local function stream() return c:stream() end
        closing("window", stream, function(s) local w = s:window(); w:close(); return true end)
        closing("timed", stream, function(s) return s:timed { fn = noargs, grid = 1, block = 1 } >= 0 end)
        closing("launch", stream, function(s) noargs:launch { grid = 1, block = 1, stream = s }; return true end)
        closing("launch_costs", stream, function(s)
          return #noargs:launch_costs { grid = 1, block = 1, stream = s, samples = 2 } == 2
        end)
        closing("sync", stream, function(s) s:synchronize(); return true end)
        local function window() local s = c:stream(); return s:window(), s end
        local function discard(w) w:discard() end
        closing("launch_loop", window, function(w)
          return w:launch_loop { fn = noargs, grid = 1, block = 1 } >= 0
        end, discard)
        closing("collect", function() local w = window(); w:close(); return w end,
          function(w) return w:collect() ~= nil end, discard)
      ]]), { "window", "timed", "launch", "launch_costs", "sync", "launch_loop", "collect" },
        { "sync", "collect" })
    end)
  end)

  describe("the C API (pp_cuda.h)", function()
    it("runs the window from C and records into the dispatch", function()
      local log, rep = os.tmpname(), os.tmpname()
      local p = assert(io.popen(("env PHASEPROBE_LIBCUDA=%s PHASEPROBE_FAKE_LOG=%s "
        .. "PHASEPROBE_FAKE_REPORT=%s build/c_cuda_window 100000 50000 2>/dev/null")
        :format(sub.fake, log, rep)))
      local out = p:read("a")
      assert.is_true(p:close(), out)
      local launches = launches_in(log)
      local report = taken(rep)
      local win, ker, gap = out:match("window_ns=(%d+) kernel_ns=(%d+) gap_ns=(%d+)")
      assert.is_truthy(win, out)
      assert.is_true(tonumber(gap) >= 50000, out)
      assert.matches("record device_window_ns=" .. win .. " kernel_ns=" .. ker
        .. " probe_ns=%d+ kernel_src=1", out)
      assert.matches("events created=4 idle=4", out)
      for _, line in ipairs(launches) do
        assert.matches("^launch spin grid=1,1,1 block=32,1,1 shared=0 coop=0 "
          .. "params=a086010000000000,00000000,%x+$", line)
      end
      assert.are.equal(3, #launches)
      assert.are.equal(NOTHING_HELD, report)
    end)
  end)
end)
