-- Faults on a real GPU (tags #gpu #fault; `make test-gpu`): out of memory, an
-- oversized launch and a trapping kernel each raise an error naming the
-- driver call and its CUresult; records emitted before the trap stay intact
-- and readable (in the store and in the line sink's file). After the trap
-- the driver keeps the whole process off the device: a new context in the
-- same process fails, with an error saying so (seen on driver 580); a new
-- process gets a working context. Run in subprocesses for that reason.
local sub = require "helpers.cuda_sub"

describe("faults on the GPU #gpu #fault", function()
  it("names the call, keeps earlier records, and a new process works after a trap", function()
    local log = os.tmpname()
    local r = sub.run({ PHASEPROBE_LIBCUDA = false }, ([[
      pp.enable()
      pp.sink(%q)
      local ctx = assert(cu.context(0))
      for i = 1, 3 do
        pp.begin(); pp.add_ns("ptx", 100 * i); pp.counts{ nodes = i }; pp.emit{ seq = i }
      end
      try("oom", ctx.alloc, ctx, 1 << 46)
      local saxpy = ctx:load_file("examples/kernels/saxpy.ptx"):func("saxpy")
      local x, y = ctx:alloc(4 * 256), ctx:alloc(4 * 256)
      try("oversized", saxpy.launch, saxpy, { grid = 1, block = 4096, args = { 256, 2.0, x, y } })
      local trap = ctx:load_file("examples/kernels/trap.ptx"):func("trap_write")
      try("launch", trap.launch, trap, { grid = 1, block = 1, args = { 16, 1 } })
      try("sync", ctx.synchronize, ctx)
      report("stored", pp.store.count(), pp.store.get(2).seq, pp.store.get(2).ptx_ns, pp.store.get(3).nodes)
      -- let go of everything of the poisoned context, then start afresh
      trap, saxpy, x, y = nil, nil, nil, nil
      ctx:close(); ctx = nil
      collectgarbage(); collectgarbage()
      try("same_process", cu.context, 0)
    ]]):format(log))
    local out = r._output
    assert.matches("^error: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY %(", r.oom, out)
    assert.matches("^error: cuLaunchKernel: CUDA_ERROR_INVALID_VALUE %(", r.oversized, out)
    local first = r.launch ~= "ok" and r.launch or r.sync
    assert.matches("^error: cu%a+: CUDA_ERROR_ILLEGAL_ADDRESS %(.-%); the device is unusable "
      .. "in this process", first, out)
    assert.are.equal("3 | 2 | 200 | 3", r.stored, out)
    assert.matches("^error: cuDevicePrimaryCtxRetain: CUDA_ERROR_ILLEGAL_ADDRESS %(.-%); "
      .. "the device is unusable in this process", r.same_process, out)
    -- a new process: saxpy on a fresh context, checked element by element
    local r2 = sub.run({ PHASEPROBE_LIBCUDA = false }, [[
      local c2 = assert(cu.context(0))
      local f = c2:load_file("examples/kernels/saxpy.ptx"):func("saxpy")
      local n = 1024
      local xs, ys = {}, {}
      for i = 1, n do xs[i] = i; ys[i] = 2 * i end
      local bx, by = c2:alloc(4 * n), c2:alloc(4 * n)
      bx:upload(xs, "f32"); by:upload(ys, "f32")
      f:launch{ grid = n // 256, block = 256, args = { n, 3.0, bx, by } }
      c2:synchronize()
      local got = by:download("f32", n)
      local bad = 0
      for i = 1, n do if got[i] ~= 5 * i then bad = bad + 1 end end
      report("after", "ok", bad)
    ]])
    assert.are.equal("ok | 0", r2.after, r2._output)
    -- the line sink's file holds the three records, and they parse back
    local pp = require "phaseprobe"
    local cols, rep = pp.parse.file(log)
    os.remove(log)
    assert.are.equal(3, rep.parsed, out)
    assert.are.equal(0, rep.rejected)
    assert.are.equal(200, cols:get(2, "ptx_ns"))
  end)
end)
