-- The Lua bindings' classes (csrc/lua/): one helper makes them
-- (lua_class.c), each metatable has one owner, and handles follow
-- LuaFileSystem's conventions (close, __close and __gc release; a closed
-- handle refuses other methods).
local pp = require "phaseprobe"

local slurp = require("helpers.files").slurp

local function binding_files()
  local out = require("helpers.shell").ls("csrc/lua/*.c csrc/lua/*.h")
  assert(#out > 5, "csrc/lua/ not found (run from the checkout)")
  return out
end

describe("binding classes", function()
  it("each metatable name is defined in one file", function()
    local where = {}
    for _, path in ipairs(binding_files()) do
      for name in slurp(path):gmatch('#define%s+[%w_]+_MT%s+"([^"]+)"') do
        where[name] = where[name] or {}
        table.insert(where[name], path)
      end
    end
    assert.truthy(where["phaseprobe.schema"], "no definition of phaseprobe.schema found")
    for name, files in pairs(where) do
      assert.are.equal(1, #files, name .. " is defined in " .. table.concat(files, ", "))
    end
  end)

  it("are made by pp_lua_class_new alone", function()
    for _, path in ipairs(binding_files()) do
      local src = slurp(path)
      for line in src:gmatch("[^\n]*luaL_newmetatable%([^\n]*") do
        assert.truthy(path:match("lua_class%.c$"), path .. ": " .. line)
      end
      if not path:match("lua_class%.c$") then
        assert.is_nil(src:match("static int class_index"), path .. " has its own class helper")
        assert.is_nil(src:match("new_class%("), path .. " has its own class helper")
      end
    end
  end)

  it("with a close method have __gc and __close, and a __name", function()
    local reg, n = debug.getregistry(), 0
    for name, mt in pairs(reg) do
      if type(name) == "string" and name:match("^phaseprobe%.") and type(mt) == "table"
        and type(mt.__index) ~= "nil" then
        local methods = mt.__index
        if type(methods) == "function" then
          for i = 1, 4 do
            local k, v = debug.getupvalue(methods, i)
            if k and type(v) == "table" then methods = v break end
          end
        end
        if type(methods) == "table" and methods.close then
          n = n + 1
          assert.are.equal("function", type(rawget(mt, "__gc")), name .. " lacks __gc")
          assert.are.equal("function", type(rawget(mt, "__close")), name .. " lacks __close")
          assert.are.equal(name, rawget(mt, "__name"))
        end
      end
    end
    assert.truthy(n >= 2, "found " .. n .. " closable classes")
  end)

  it("columns and parsers: close twice, then <close>, then collect; closed ones refuse", function()
    local c = pp.parse.string("p a=1\n")
    c:close()
    c:close()
    do local _ <close> = c end
    local ok, err = pcall(c.count, c)
    assert.is_false(ok)
    assert.matches("bad argument #1 .*%(closed columns%)", err)
    assert.matches("closed", tostring(c))
    local p = pp.parse.new()
    p:close()
    ok, err = pcall(p.string, p, "p a=1\n")
    assert.is_false(ok)
    assert.matches("bad argument #1 .*%(closed parser%)", err)
    c, p = nil, nil
    collectgarbage()
    collectgarbage()
  end)

  it("schema handles made in one file are read in another (pp.parse options)", function()
    local s = pp.schema { prefix = "bindings_spec", phases = { "a" } }
    local line = { "bindings_spec" }
    for _, f in ipairs(s.fields) do line[#line + 1] = f .. "=" .. (f == "kernel_src" and "none" or "1") end
    local cols, report = pp.parse.string(table.concat(line, " ") .. "\n", { schemas = { s } })
    assert.are.equal(1, #cols, report.errors[1] and report.errors[1].what)
    local ok, err = pcall(pp.parse.string, "x a=1\n", { schemas = { {} } })
    assert.is_false(ok)
    assert.matches("must be a phaseprobe.schema, got table", err)
  end)
end)
