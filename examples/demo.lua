-- Runs the phaseprobe demo from a checkout, before or without bin/phaseprobe:
--
--   lua5.4 examples/demo.lua [--log PATH] [--rounds N] [--replay PATH]
--
-- (run from the repository root after `make`; see lua/phaseprobe/dispatch/demo.lua)
local root = (arg and arg[0] or ""):match("^(.*)/examples/[^/]*$") or "."
package.path = root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;" .. package.path
package.cpath = root .. "/?.so;" .. package.cpath
os.exit(require("phaseprobe.dispatch.demo").main({ table.unpack(arg or {}) }))
