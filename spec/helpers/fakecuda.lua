-- fakecuda.lua: the specs' side of the fake CUDA driver (fakecuda.c, built
-- as build/libfakecuda.so): the environment that selects it, a chunk run
-- in its own interpreter that must exit cleanly, the small module the
-- chunks load, and a chunk run with a context and that module set up.
-- Shared by spec/cuda_fake_spec.lua and spec/cuda_fake_errors_spec.lua.
--
--   local fake = require "helpers.fakecuda"
--   local sub, fake_env = fake.sub, fake.env
--   local r = sub.run(fake_env { PHASEPROBE_FAKE_FAULTS = "oom" }, chunk)
--   local r = fake.with_ctx({}, [[ report("n", #mod:func("kinds").params) ]])
--   sub.fake, sub.fake_ready(): as in helpers.cuda_sub
local cuda_sub = require "helpers.cuda_sub"
local files = require "helpers.files"

local M = {}

-- helpers.cuda_sub, but every chunk must exit cleanly (a sanitizer report
-- fails it too).
M.sub = setmetatable({
  run = function(env, chunk)
    local r = cuda_sub.run(env, chunk)
    assert(r._status, "subprocess failed:\n" .. r._output)
    return r
  end,
}, { __index = cuda_sub })

-- A small hand-written module (spec/fixtures/cuda/kinds.ptx): globals, an
-- entry with one parameter of each kind, and a "trap" entry.
M.KINDS_PTX = files.slurp("spec/fixtures/cuda/kinds.ptx")

-- The environment of a chunk against the fake: no faults, no launch log,
-- no report at exit, but what extra (a table of variables) sets.
function M.env(extra)
  local env = {
    PHASEPROBE_LIBCUDA = cuda_sub.fake,
    PHASEPROBE_FAKE_FAULTS = false,
    PHASEPROBE_FAKE_LOG = false,
    PHASEPROBE_FAKE_REPORT = false,
  }
  for k, v in pairs(extra or {}) do
    env[k] = v
  end
  return env
end

-- Runs `body` after setting up ctx (context 0), mod (KINDS_PTX), saxpy.
function M.with_ctx(extra_env, body)
  local setup = ([[
local ctx = assert(cu.context(0))
local mod = ctx:load(%q)
local saxpy_mod = ctx:load_file("examples/kernels/saxpy.ptx")
local saxpy = saxpy_mod:func("saxpy")
]]):format(M.KINDS_PTX)
  return M.sub.run(M.env(extra_env), setup .. body)
end

return M
