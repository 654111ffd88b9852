-- The LuaRocks package (phaseprobe-*.rockspec): the rockspec installs every
-- Lua file of lua/phaseprobe/ and the demo's log; `make rock` gives a source
-- rock that luarocks installs into a tree of its own without any server
-- (module, Lua side, command, demo log), whose command runs the demo from
-- another directory, and which `luarocks remove` takes away leaving no file;
-- `luarocks make --pack-binary-rock` gives a linux-x86_64 rock holding all
-- of them and installs nothing anywhere else. Slow (one full build), so
-- left out of the sanitizer runs (tags nosan, novalgrind).
-- commands started from here must not inherit the jobserver of the make
-- that runs the specs (its descriptors are not passed on)
local CLEAN_ENV = "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "
local LUAROCKS = CLEAN_ENV .. "luarocks --lua-version=5.4 "

local shell = require "helpers.shell"
local files = require "helpers.files"
local sh, lines_of = shell.run, shell.lines

local function rockspec()
  local name = lines_of("ls phaseprobe-*.rockspec")[1]
  local env = {}
  assert(loadfile(name, "t", env))()
  return env, name
end

local function missing_tools()
  for _, tool in ipairs { "luarocks", "git", "zip", "unzip" } do
    if not sh("command -v " .. tool) then return tool end
  end
end

-- Whether the packaging tools are here; when one is not, the spec is
-- pending and says which.
local function have_tools()
  local missing = missing_tools()
  if missing then pending(missing .. " not installed (Debian packages luarocks, git, zip, unzip)") end
  return not missing
end

-- the files the rock must put in a tree, relative to it
local function expected_in_tree()
  local t = {
    "bin/phaseprobe",
    "lib/lua/5.4/phaseprobe.so",
    "share/lua/5.4/phaseprobe/data/demo-h200.log",
  }
  for _, f in ipairs(lines_of("cd lua && find phaseprobe -name '*.lua'")) do
    t[#t + 1] = "share/lua/5.4/" .. f
  end
  table.sort(t)
  return t
end

describe("the rockspec", function()
  it("installs every Lua file of lua/phaseprobe/ under its module name, and the demo log", function()
    local spec = rockspec()
    local want = {}
    for _, f in ipairs(lines_of("cd lua && find phaseprobe -name '*.lua'")) do
      want[(f:gsub("%.lua$", ""):gsub("/", "."))] = "lua/" .. f
    end
    want["phaseprobe.data.demo-h200"] = "examples/data/demo-h200.log"
    assert.are.same(want, spec.build.install.lua)
    assert.are.same({ phaseprobe = "phaseprobe.so" }, spec.build.install.lib)
    assert.are.same({ phaseprobe = "bin/phaseprobe" }, spec.build.install.bin)
  end)

  it("declares lua-cjson, xxhash.h, a homepage, a versioned source and the license", function()
    local spec = rockspec()
    local deps = table.concat(spec.dependencies, "\n")
    assert.truthy(deps:find("lua-cjson", 1, true))
    assert.falsy(deps:find("luafilesystem", 1, true)) -- commands come from a table, no listing
    assert.truthy(deps:find("lua >= 5.4", 1, true))
    assert.are.equal("xxhash.h", spec.external_dependencies.XXHASH.header)
    assert.truthy(spec.description.homepage)
    assert.truthy(spec.source.tag:find(spec.version:match("^(.*)%-%d+$"), 1, true))
    assert.are.equal("MIT", spec.description.license)
    assert.truthy(io.open("LICENSE")):close()
  end)
end)

describe("the source rock #nosan #novalgrind", function()
  local root
  setup(function()
    root = lines_of("mktemp -d /tmp/pp-rock-XXXXXX")[1]
  end)
  teardown(function()
    if root then os.execute("rm -rf " .. root) end
  end)

  it("installs into a tree of its own without a server, runs the demo elsewhere, and is removed whole", function()
    if not have_tools() then return end
    local ok, out = sh(CLEAN_ENV .. "make --no-print-directory rock ROCK_OUT=" .. root)
    assert.is_true(ok, out)
    local rock = root .. "/" .. lines_of("cd " .. root .. " && ls *.src.rock")[1]
    local tree = root .. "/tree"
    assert.are.same({}, lines_of("ls -A " .. root .. " | grep -x tree || true"))
    ok, out = sh("cd " .. root .. " && " .. LUAROCKS .. "--tree=" .. tree .. " install --deps-mode=none " .. rock)
    assert.is_true(ok, out)
    local got = lines_of("cd " .. tree .. " && find . -type f ! -path './lib/luarocks/*' | sed 's|^\\./||'")
    assert.are.same(expected_in_tree(), got)
    -- the command is installed as it is (no wrapper that loads
    -- luarocks.loader at every start) and finds its tree's modules itself:
    -- from another directory, with no LUA_PATH set
    assert.are.equal(files.slurp("bin/phaseprobe"), files.slurp(tree .. "/bin/phaseprobe"))
    os.execute("mkdir -p " .. root .. "/elsewhere")
    ok, out = sh("cd " .. root .. "/elsewhere && env -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4"
      .. " PHASEPROBE_LIBCUDA=/nonexistent/libcuda.so.1 " .. tree .. "/bin/phaseprobe demo")
    assert.is_true(ok, out)
    assert.truthy(out:find("log " .. tree .. "/share/lua/5.4/phaseprobe/data/demo-h200.log", 1, true), out)
    assert.truthy(out:find("shape large:", 1, true), out)
    -- removed: only LuaRocks' own (empty) manifest stays
    ok, out = sh(LUAROCKS .. "--tree=" .. tree .. " remove phaseprobe")
    assert.is_true(ok, out)
    assert.are.same({ "./lib/luarocks/rocks-5.4/manifest" }, lines_of("cd " .. tree .. " && find . -type f"))
    assert.are.same({}, lines_of("cd " .. tree .. " && find . -name '*phaseprobe*'"))
  end)

  it("luarocks make --pack-binary-rock gives a linux-x86_64 rock with the module, the Lua side, the command, the log", function()
    if not have_tools() then return end
    -- what the default trees hold before and after: packing installs nothing there
    local trees = "find /usr/local -maxdepth 5 ! -path '/usr/local/lib/python*'; "
      .. "[ -d \"$HOME/.luarocks\" ] && find \"$HOME/.luarocks\"; true"
    local before = lines_of(trees)
    local ok, out = sh(LUAROCKS .. "make --pack-binary-rock --deps-mode=none && mv phaseprobe-*.linux-x86_64.rock " .. root)
    assert.is_true(ok, out)
    assert.are.same(before, lines_of(trees))
    local names = lines_of("cd " .. root .. " && ls *.linux-x86_64.rock")
    assert.are.equal(1, #names)
    local listed = lines_of("unzip -Z1 " .. root .. "/" .. names[1] .. " | grep -v '/$'")
    local want = { "bin/phaseprobe", "lib/phaseprobe.so", "lua/phaseprobe/data/demo-h200.log", "rock_manifest" }
    for _, f in ipairs(lines_of("cd lua && find phaseprobe -name '*.lua'")) do want[#want + 1] = "lua/" .. f end
    local spec, name = rockspec()
    want[#want + 1] = name
    for _, d in ipairs(lines_of("ls README.md LICENSE BENCHMARKS.md ARCHITECTURE.md")) do want[#want + 1] = "doc/" .. d end
    table.sort(want)
    assert.are.same(want, listed)
    assert.truthy(spec)
  end)
end)
