-- Two GPUs at once (tag #gpu; needs a machine with 2 GPUs, e.g. the
-- nvidia-h200-x2 kind): two threads, each with its own Lua state and GPU,
-- dispatching at the same time; every record tagged with its device and
-- thread, none mixed or lost, every output checked.
local pp = require "phaseprobe"
local shell = require "helpers.shell"

describe("two GPUs at once #gpu", function()
  it("keeps each thread's records and outputs apart", function()
    local n = pp.cuda.device_count()
    if not n or n < 2 then
      pending("needs 2 GPUs, this machine has " .. tostring(n))
      return
    end
    local ok, out = shell.run("MULTI_GPU_DISPATCHES=200 build/multi_state 2 spec/fixtures/scripts/multi_gpu_dispatch.lua 2>&1")
    print(out)
    assert.is_true(ok, out)
    for t = 0, 1 do
      assert.truthy(out:find(("thread %d: device=%d name=[^\n]* dispatches=200 mine=200 wrong=0 bad_outputs=0"):format(t, t)), out)
    end
  end)
end)
