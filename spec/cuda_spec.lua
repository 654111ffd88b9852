-- pp.cuda on any machine: the module imports, and without a usable driver it
-- says why instead of failing. (Driver error paths: cuda_fake_errors_spec.lua
-- and cuda_fake_spec.lua; the GPU itself: cuda_gpu_spec.lua, tag #gpu.)
local pp = require "phaseprobe"
local probe = require "helpers.probe"

describe("pp.cuda", function()
  local cu = pp.cuda

  it("is part of the module, with its entry points", function()
    assert.is_table(cu)
    for _, name in ipairs { "available", "device_count", "context", "driver" } do
      assert.is_function(cu[name], name)
    end
    assert.is_boolean(cu.built_with_cuda)
  end)

  it("answers available() with true, or false and a reason", function()
    local ok, why = probe.answer(20, cu.available())
    if ok then
      assert.is_true(cu.device_count() >= 1)
    else
      -- the reason is the same wherever the driver is needed
      local ctx, why2 = cu.context(0)
      assert.is_nil(ctx)
      assert.are.equal(why, why2)
      local n, why3 = cu.device_count()
      assert.is_nil(n)
      assert.are.equal(why, why3)
    end
  end)

  it("says that a build without the CUDA headers is analysis only", function()
    if cu.built_with_cuda then
      assert.is_function(cu.spin_us)
    else
      local ok, why = cu.available()
      assert.is_false(ok)
      assert.matches("built without the CUDA toolkit headers", why)
    end
  end)

  it("spins the host for at least the time asked", function()
    if not cu.built_with_cuda then
      return pending("no CUDA layer in this build")
    end
    local t0 = pp.now()
    cu.spin_us(300)
    local dt = pp.now() - t0
    assert.is_true(dt >= 300000, "spun only " .. dt .. " ns")
    assert.has_error(function() cu.spin_us(-1) end)
  end)
end)
