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
  -- an argument the demo does not take is a usage error, said on stderr
  if type(demo.parse_args) == "function" then
    local ok, msg = pcall(demo.parse_args, args)
    if not ok then
      ctx.usage((tostring(msg):gsub("^phaseprobe demo: ", ""):gsub(" %(see %-%-help%)$", "")))
    end
  end
  local res = demo.main(args, function(line) ctx.write(line, "\n") end, nil,
    function(line) ctx.err:write(line, "\n") end)
  if res == nil or res == true then return 0 end
  if res == false then return 1 end
  return math.tointeger(res) or 1
end

return C
