-- probe.lua: the probe's state between specs, and errors they expect.
--
--   local probe = require "helpers.probe"
--   before_each(probe.fresh)
--   probe.raises("unknown phase", pp.phase, "nope")
local pp = require "phaseprobe"
local assert = require "luassert"

local M = {}

-- The default schema, the probe on, lines to nowhere, the store on (the
-- first 100,000 records) and empty, no tags of the specs, no dispatch
-- left open by a previous case.
function M.fresh()
  pp.use(pp.default_schema())
  pp.enable()
  pp.sink("none")
  if pp.is_open() then pp.emit { wall_ns = 0 } end
  for _, k in ipairs { "shape", "knob", "k" } do pp.tag(k, nil) end
  pp.store.enable(true)
  pp.store.capacity(100000)
  pp.store.keep("first")
  pp.store.clear()
end

-- For a block of specs that dispatches: save() keeps whether the probe is
-- on; restore() puts that back, with lines to stderr and no shape or knob
-- tag (setup(saved.save); teardown(saved.restore)).
function M.saved()
  local was
  return {
    save = function() was = pp.enabled() end,
    restore = function()
      pp.sink("stderr")
      pp.enable(was)
      pp.tag("shape", nil)
      pp.tag("knob", nil)
    end,
  }
end

-- Calls f(...), which must raise an error holding `text` (plain); returns
-- the error.
function M.raises(text, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "accepted: expected an error matching " .. text)
  assert.truthy(tostring(err):find(text, 1, true), tostring(err))
  return err
end

-- Checks the answer of an availability query (cu.available(),
-- cu.cupti_available()): true and no reason, or false and a reason of more
-- than `min` characters. Returns the answer.
function M.answer(min, ok, why)
  assert.is_boolean(ok)
  if ok then
    assert.is_nil(why)
  else
    assert.is_string(why)
    assert.is_true(#why > min, why)
  end
  return ok, why
end

-- pp.enabled() in a fresh interpreter started with env ("env -u X Y=1"):
-- "true" or "false". LUA names the interpreter (PHASEPROBE_LUA).
function M.enabled_with(env)
  local lua = os.getenv("PHASEPROBE_LUA") or "lua5.4"
  local p = io.popen(env .. " " .. lua .. " -e 'package.cpath=\"./?.so;\"..package.cpath;"
    .. " print(require(\"phaseprobe\").enabled())'")
  local out = p:read("a")
  p:close()
  return out:match("%a+")
end

return M
