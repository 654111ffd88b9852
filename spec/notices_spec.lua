-- pp.notices: where the module's notices go (a line sink that fails, one
-- that falls behind, the store full). stderr by default; a file, a
-- descriptor, or nowhere when asked, so a program (or a test suite) that
-- raises them on purpose keeps them off its terminal. Each case runs in a
-- fresh process whose stderr and stdout are captured apart.
local files = require "helpers.files"

local LUA = os.getenv("PHASEPROBE_LUA") or "lua5.4"
local ROOT = io.popen("pwd"):read("l")
local PATHS = ("package.path = '%s/lua/?.lua;%s/lua/?/init.lua;' .. package.path; "
  .. "package.cpath = '%s/?.so;' .. package.cpath; local pp = require 'phaseprobe'; "):format(ROOT, ROOT, ROOT)

local function tmp()
  local p = os.tmpname()
  os.remove(p)
  return p
end

-- runs chunk in a fresh interpreter: stdout, stderr, exit status
local function run(chunk)
  local script, out, err = tmp(), tmp(), tmp()
  files.spit(script, PATHS .. chunk)
  local ok = os.execute(("%s %s >%s 2>%s"):format(LUA, script, out, err))
  local o, e = files.slurp(out), files.slurp(err)
  os.remove(script); os.remove(out); os.remove(err)
  return o, e, ok
end

local count = require("helpers.text").count

local FAILING_SINK = [[
  pp.enable()
  assert(pp.sink("/dev/full"))
  for i = 1, 3 do pp.begin(); pp.emit { seq = i } end
  pp.flush()
]]
local STORE_FULL = [[
  pp.enable(); pp.sink("none")
  pp.store.capacity(2)
  for i = 1, 5 do pp.begin(); pp.emit { seq = i } end
  pp.flush()
]]
local SINK_NOTICE = "phaseprobe: record lines to /dev/full could not be written"
local STORE_NOTICE = "phaseprobe: record store full (2 records)"

describe("pp.notices", function()
  it("sends notices to stderr by default", function()
    local _, err = run(FAILING_SINK .. STORE_FULL)
    assert.are.equal(1, count(err, SINK_NOTICE), err)
    assert.are.equal(1, count(err, STORE_NOTICE), err)
  end)

  it("sends them to a file instead, each once, and none to stderr", function()
    local log = tmp()
    local out, err, ok = run(("assert(pp.notices(%q) == true)\n"):format(log) .. FAILING_SINK .. STORE_FULL
      .. "io.write('done')")
    assert.is_true(ok, err)
    assert.are.equal("done", out)
    assert.are.equal("", err)
    local text = files.slurp(log)
    os.remove(log)
    assert.are.equal(1, count(text, SINK_NOTICE), text)
    assert.are.equal(1, count(text, STORE_NOTICE), text)
  end)

  it("appends to the file, and goes back to stderr when asked", function()
    local log = tmp()
    files.spit(log, "before\n")
    local _, err = run(("pp.notices(%q)\n"):format(log) .. FAILING_SINK
      .. "assert(pp.notices('stderr'))\n" .. STORE_FULL)
    local text = files.slurp(log)
    os.remove(log)
    assert.truthy(text:find("^before\n"), text)
    assert.are.equal(1, count(text, SINK_NOTICE), text)
    assert.are.equal(0, count(text, STORE_NOTICE), text)
    assert.are.equal(1, count(err, STORE_NOTICE), err)
    assert.are.equal(0, count(err, SINK_NOTICE), err)
  end)

  it("sends them to a descriptor, or nowhere", function()
    local out, err = run("assert(pp.notices(1))\n" .. FAILING_SINK .. "assert(pp.notices('none'))\n" .. STORE_FULL)
    assert.are.equal(1, count(out, SINK_NOTICE), out)
    assert.are.equal(0, count(out .. err, STORE_NOTICE), out .. err)
    assert.are.equal("", err)
  end)

  it("raises on a bad argument and returns nil and a message for a path it cannot open", function()
    local out, err, ok = run([[
      for _, bad in ipairs { {}, -2, "", 1 << 40 } do
        local fine, msg = pcall(pp.notices, bad)
        assert(not fine and msg:find("bad argument #1 to '[%w.]*notices'"), tostring(msg))
      end
      local r, msg = pp.notices("/nonexistent/dir/notices.log")
      assert(r == nil and msg:find("/nonexistent/dir/notices.log", 1, true), tostring(msg))
      io.write("ok")]])
    assert.is_true(ok, err)
    assert.are.equal("ok", out)
  end)
end)
