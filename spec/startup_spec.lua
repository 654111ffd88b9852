-- What starting costs: loading the module chooses no clock (the choice, about
-- 25 ms with the TSC's calibration, is made when the probe is enabled or the
-- clock first read or asked about, so never inside a dispatch); the scope
-- cost of a Lua state is measured when the probe is on for it; and
-- `phaseprobe --help` loads no command module, nor what the commands need.
-- Each case runs in a fresh process. The time itself is measured by
-- bench/startup.lua, not here.
local LUA = os.getenv("PHASEPROBE_LUA") or "lua5.4"
local ROOT = io.popen("pwd"):read("l")
local PATHS = ("package.path = '%s/lua/?.lua;%s/lua/?/init.lua;' .. package.path; "
  .. "package.cpath = '%s/?.so;' .. package.cpath; "):format(ROOT, ROOT, ROOT)

-- runs a Lua chunk in a fresh interpreter with this checkout's paths
local function run(chunk, env)
  local f = os.tmpname()
  local h = assert(io.open(f, "w"))
  h:write(PATHS, chunk)
  h:close()
  local p = io.popen("env -u PHASEPROBE -u VYRE_CUDA_DISPATCH_PHASE_PROBE " .. (env or "")
    .. " " .. LUA .. " " .. f .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  os.remove(f)
  assert.is_true(ok == true, out)
  return (out:gsub("\n$", ""))
end

describe("the probe clock", function()
  it("is not chosen by loading the module: the first question about it chooses it", function()
    assert.are.equal("clock query", run([[
      local pp = require "phaseprobe"
      io.write(pp.clock().chosen_by)]]))
  end)

  it("is chosen when the probe is enabled, from Lua or from the environment", function()
    assert.are.equal("enable", run([[
      local pp = require "phaseprobe"
      pp.enable()
      io.write(pp.clock().chosen_by)]]))
    assert.are.equal("enable", run([[
      local pp = require "phaseprobe"
      io.write(pp.clock().chosen_by)]], "PHASEPROBE=1"))
  end)

  it("is chosen by its first read when the probe is off", function()
    assert.are.equal("first read", run([[
      local pp = require "phaseprobe"
      local t = pp.now()
      assert(pp.now() >= t)
      io.write(pp.clock().chosen_by)]]))
  end)
end)

describe("the scope cost of a Lua state", function()
  -- probe_ns of a record with one scope: the state's scope cost, 0 if it
  -- was never measured
  local chunk = [[
    local pp = require "phaseprobe"
    pp.sink("none")
    pp.enable()
    pp.begin()
    do local _ <close> = pp.phase("prepare") end
    local r = pp.emit { seq = 1 }
    io.write(r.probe_ns > 0 and "measured" or "zero")]]

  it("is measured when the probe is enabled after the module was loaded", function()
    assert.are.equal("measured", run(chunk))
  end)

  it("is measured at load when the probe is already on", function()
    assert.are.equal("measured", run(chunk:gsub("pp%.enable%(%)", ""), "PHASEPROBE=1"))
  end)
end)

describe("phaseprobe --help", function()
  it("lists every command with its summary without loading any of them", function()
    local out = run([[
      local cli = require "phaseprobe.cli"
      local text = {}
      local sink = { write = function(self, ...) for _, s in ipairs { ... } do text[#text + 1] = s end return self end,
                     flush = function() end }
      assert(cli.main({ "--help" }, sink, sink) == 0)
      local loaded = {}
      for k in pairs(package.loaded) do
        if k:match("^phaseprobe%.") and k ~= "phaseprobe.cli" then loaded[#loaded + 1] = k end
      end
      table.sort(loaded)
      io.write("loaded: ", table.concat(loaded, " "), "\n")
      io.write("clock: ", package.loaded.phaseprobe and package.loaded.phaseprobe.clock().chosen_by
        or "module not loaded", "\n")
      io.write(table.concat(text))]])
    assert.truthy(out:find("^loaded: \n"), out)
    local clock = out:match("\nclock: ([^\n]*)")
    assert.truthy(clock == "module not loaded" or clock == "clock query", clock)
    -- every command, with the summary its module gives
    local cli = require "phaseprobe.cli"
    for _, name in ipairs(cli.commands()) do
      local summary = cli.command(name).summary
      assert.truthy(out:find("\n  " .. name .. " +" .. summary:gsub("%p", "%%%0") .. "\n"), name)
    end
  end)
end)

describe("require 'phaseprobe'", function()
  -- The Lua side is found through the caller's package.path like any
  -- module's; the C module never edits it (run from a checkout: bin/phaseprobe,
  -- tools/repl or LUA_PATH set it).
  it("leaves package.path as it was and reaches pp.records through it", function()
    assert.are.equal("same table", run([[
      local before = package.path
      local pp = require "phaseprobe"
      io.write(package.path == before and "same" or "changed: " .. package.path, " ",
        type(pp.records))]]))
  end)

  it("without the Lua side on package.path: the C module works, pp.records is nil", function()
    assert.are.equal("/nonexistent/?.lua nil 1 1", run([[
      package.path = "/nonexistent/?.lua"
      local pp = require "phaseprobe"
      local set = pp.parse.list({ { wall_ns = 5 } })
      io.write(package.path, " ", tostring(pp.records), " ", set:count(), " ",
        pp.numeric.summary({ 1 }).count)]]))
  end)
end)
