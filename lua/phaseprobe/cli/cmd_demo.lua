--- phaseprobe demo: runs the demo module (phaseprobe.dispatch.demo).
local C = {
  summary = "the demo: the nine-phase decomposition of real dispatches",
  usage = [[
usage: phaseprobe demo [ARGS...]

Runs require("phaseprobe.dispatch.demo").main(ARGS): dispatches on the GPU when there
is one, else the recorded log.]],
}

function C.run(args, ctx)
  if not package.searchpath("phaseprobe.dispatch.demo", package.path) and not package.preload["phaseprobe.dispatch.demo"] then
    ctx.fail("the demo module (phaseprobe.dispatch.demo) is not installed")
  end
  local demo = require "phaseprobe.dispatch.demo"
  if type(demo) ~= "table" or type(demo.main) ~= "function" then
    ctx.fail("phaseprobe.dispatch.demo has no main function")
  end
  local res = demo.main(args, function(line) ctx.write(line, "\n") end)
  if res == nil or res == true then return 0 end
  if res == false then return 1 end
  return math.tointeger(res) or 1
end

return C
