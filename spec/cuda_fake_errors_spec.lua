-- pp.cuda against the fault-injecting fake driver (build/libfakecuda.so):
-- finding the driver (a library that will not load, a fault the fake
-- injects at load, the toolkit's stub) and the driver's own errors as the
-- binding reports them (the call, the error's name and text, what it was
-- asked). Split out of spec/cuda_fake_spec.lua, which holds the binding's
-- objects on the fake; the two share helpers/fakecuda.lua, and these
-- cases stay under the same "pp.cuda with the fake driver" block, so
-- their full names are unchanged. Each case runs in its own interpreter,
-- which must exit cleanly.
local fake = require "helpers.fakecuda"
local sub, fake_env, with_ctx = fake.sub, fake.env, fake.with_ctx

describe("pp.cuda with the fake driver", function()
  if not sub.fake_ready() then
    return pending("needs the CUDA headers at build time and build/libfakecuda.so")
  end

  describe("loading", function()
    it("is available through the fake and reports its driver", function()
      local r = sub.run(fake_env(), [[
        report("avail", cu.available())
        local d = cu.driver()
        report("driver", d.version, d.api_version, d.param_info)
        report("count", cu.device_count())
      ]])
      assert.are.equal("true", r.avail, r._output)
      assert.are.equal("12000 | 12000 | false", r.driver)
      assert.are.equal("1", r.count)
    end)

    it("explains a library that cannot be loaded", function()
      local r = sub.run({ PHASEPROBE_LIBCUDA = "/nonexistent/libcuda.so.1" }, [[
        report("avail", cu.available())
        report("ctx", cu.context(0))
        report("count", cu.device_count())
      ]])
      assert.matches("^false | cannot load /nonexistent/libcuda.so.1", r.avail)
      assert.matches("^nil | cannot load /nonexistent/libcuda.so.1", r.ctx)
      assert.matches("^nil | cannot load", r.count)
    end)

    -- a driver fault the fake injects: what available() says of it
    for _, case in ipairs {
      { "names cuInit and its error when there is no device", "no_device",
        "^false | cuInit: CUDA_ERROR_NO_DEVICE %(no CUDA%-capable device is detected%)" },
      { "names a missing entry point and its version", "missing=cuLaunchKernel",
        "entry point cuLaunchKernel %(CUDA 12%.0%) not found in .*libfakecuda%.so" },
      { "refuses a driver older than CUDA 12.0", "old_driver",
        "supports CUDA 11%.8; phaseprobe needs 12%.0" },
    } do
      local title, fault, want = table.unpack(case)
      it(title, function()
        local r = sub.run(fake_env { PHASEPROBE_FAKE_FAULTS = fault }, [[
          report("avail", cu.available())
        ]])
        assert.matches(want, r.avail)
      end)
    end

    it("refuses the toolkit's stub library", function()
      local dir = os.tmpname()
      os.remove(dir)
      assert(os.execute(("mkdir -p %s/stubs && cp %s %s/stubs/libcuda.so")
        :format(dir, sub.fake, dir)))
      local r = sub.run({ PHASEPROBE_LIBCUDA = dir .. "/stubs/libcuda.so" }, [[
        report("avail", cu.available())
      ]])
      os.execute(("rm -rf %s"):format(dir))
      assert.matches("stub library, not the driver", r.avail)
    end)
  end)

  describe("driver errors", function()
    it("raises on invalid PTX with the call, the error and the JIT log", function()
      local r = sub.run(fake_env(), [[
        local ctx = cu.context(0)
        try("bad", ctx.load, ctx, "this is not PTX")
      ]])
      assert.are.equal("error: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (a PTX "
        .. "JIT compilation failed): ptxas application ptx input, line 1; fatal"
        .. "   : Missing .version directive at start of file", r.bad)
    end)

    it("raises on out of memory, naming the call and the size", function()
      local r = sub.run(fake_env(), [[
        local ctx = cu.context(0)
        try("huge", ctx.alloc, ctx, 1 << 40)
      ]])
      assert.matches("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY %(out of memory%): "
        .. "1099511627776 bytes", r.huge)
      local f = sub.run(fake_env { PHASEPROBE_FAKE_FAULTS = "oom" }, [[
        local ctx = cu.context(0)
        try("small", ctx.alloc, ctx, 16)
      ]])
      assert.matches("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY", f.small)
    end)

    it("raises on a bad launch configuration with the configuration", function()
      local r = with_ctx({}, [[
        local x = ctx:alloc(16)
        try("block", saxpy.launch, saxpy,
            {grid = 1, block = 2048, args = {4, 1.0, x, x}})
        try("shared", saxpy.launch, saxpy,
            {grid = {2, 3}, block = {32, 2}, shared = 1 << 20, args = {4, 1.0, x, x}})
      ]])
      assert.are.equal("error: cuLaunchKernel: CUDA_ERROR_INVALID_VALUE (invalid "
        .. "argument): fn:launch of 'saxpy' (grid=1x1x1 block=2048x1x1 shared=0)",
        r.block)
      assert.matches("grid=2x3x1 block=32x2x1 shared=1048576%)$", r.shared)
    end)

    it("raises for a missing function or global, naming it", function()
      local r = with_ctx({}, [[
        try("fn", mod.func, mod, "nope")
        try("g", mod.global, mod, "nothere")
      ]])
      assert.are.equal("error: cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (named "
        .. "symbol not found): function 'nope'", r.fn)
      assert.are.equal("error: cuModuleGetGlobal: CUDA_ERROR_NOT_FOUND (named "
        .. "symbol not found): global 'nothere'", r.g)
    end)

    it("reports an illegal address as sticky and refuses the context after", function()
      local r = with_ctx({}, [[
        local trap = mod:func("trap_write")
        trap:launch{grid = 1, block = 1, args = {16, 1}}
        try("sync", ctx.synchronize, ctx)
        try("after", ctx.alloc, ctx, 16)
        report("usable", ctx.usable)
      ]])
      assert.are.equal("error: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (an "
        .. "illegal memory access was encountered); the device is unusable in "
        .. "this process after this error (even a new context fails); restart "
        .. "the process", r.sync)
      assert.matches("ctx:alloc: context of device 0 is unusable after "
        .. "CUDA_ERROR_ILLEGAL_ADDRESS; restart the process", r.after)
      assert.are.equal("false", r.usable)
    end)

    it("reports load_file of a missing file as nil, message", function()
      local r = sub.run(fake_env(), [[
        local ctx = cu.context(0)
        report("missing", ctx:load_file("/nonexistent/k.ptx"))
      ]])
      assert.matches("^nil | ctx:load_file: cannot open '/nonexistent/k.ptx'",
        r.missing)
    end)

    it("rejects unknown JIT options and out-of-range ones", function()
      local r = sub.run(fake_env(), [[
        local ctx = cu.context(0)
        try("unknown", ctx.load, ctx, ".version 8.0", {bogus = 1})
        try("range", ctx.load, ctx, ".version 8.0", {opt_level = 9})
      ]])
      assert.matches("unknown option 'bogus'", r.unknown)
      assert.matches("option 'opt_level' must be an integer in 0%.%.4, got 9", r.range)
    end)
  end)
end)
