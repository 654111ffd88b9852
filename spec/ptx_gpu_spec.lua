-- pp.ptx against the CUDA driver (#gpu): every entry the scanner finds is
-- found by cuModuleGetFunction, and its parameter list (count, sizes and
-- buffer offsets) is the one cuFuncGetParamInfo reports.
--
--   . .gpu-lua/env.sh && make test-gpu
package.cpath = "./?.so;" .. package.cpath
local pp = require "phaseprobe"
local oracle = require "helpers.ptx_oracle"

local FILES = {
  "examples/kernels/params.ptx",
  "examples/kernels/shared.ptx",
  "examples/kernels/gridsync.ptx",
  "spec/fixtures/ptx/vyre_grid3.ptx",
  "spec/fixtures/ptx/comments_strings.ptx",
  "spec/fixtures/ptx/syncs.ptx",
  "spec/fixtures/ptx/syncs-G.ptx",
}

local function cuda_or_pending()
  local cuda = pp.cuda
  if not (cuda and cuda.available) then
    pending("pp.cuda.available is missing: the CUDA layer is not built in")
    return nil
  end
  local ok, why = cuda.available()
  if not ok then
    pending("no CUDA driver: " .. tostring(why))
    return nil
  end
  return cuda
end

local function close(h)
  if h and h.close then h:close() end
end

describe("pp.ptx scan results against the driver #gpu", function()
  it("agree on entry names and parameter counts, sizes and offsets #gpu", function()
    local cuda = cuda_or_pending()
    if not cuda then return end
    local ctx = cuda.context(0)
    local checked = 0
    for _, path in ipairs(FILES) do
      local text = oracle.read(path)
      local r = pp.ptx.scan(text)
      assert.is_false(r.partial, path)
      assert.is_true(#r.entries > 0, path)
      local mod = ctx:load(text)
      for _, e in ipairs(r.entries) do
        local fn = mod:func(e.name)
        assert.is_not_nil(fn, path .. ": " .. e.name)
        local driver = fn.params
        assert.are.equal(#e.params, #driver, path .. ": " .. e.name .. " parameter count")
        for i, p in ipairs(e.params) do
          local where = ("%s: %s param %d (%s)"):format(path, e.name, i, p.name)
          assert.are.equal(p.size, driver[i].size, where .. " size")
          assert.are.equal(p.offset, driver[i].offset, where .. " offset")
        end
        checked = checked + 1
      end
      close(mod)
    end
    close(ctx)
    assert.are.equal(11, checked) -- 2 + 2 + 1 + 1 + 1 + 2 + 2 entries
  end)
end)
