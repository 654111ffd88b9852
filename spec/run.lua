-- Runs busted with whichever Lua runs this file (make test uses lua5.4).
require("busted.runner")({ standalone = false })
