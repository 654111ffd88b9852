-- `make install` into a DESTDIR: exactly the module, its Lua side, the
-- command, the demo's recorded log, the public headers, libphaseprobe.a and
-- phaseprobe.pc; a C program built against that install through pkg-config
-- (examples/c_dispatch.c) prints reference-format lines; the installed
-- command runs the demo from another directory; `make uninstall` takes every
-- file away again. Also: the default target and `install` build no test
-- helper and link nothing against a hard-coded library path.
local files = require "helpers.files"

local LUA = os.getenv("PHASEPROBE_LUA") or "lua5.4"
local PREFIX = "/usr/local"
-- A make started from these specs must not inherit the jobserver of the
-- make that runs them (its descriptors are not passed on).
local MAKE = "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory"

local shell = require "helpers.shell"
local sh, lines_of = shell.run, shell.lines

local function have(tool)
  return (sh("command -v " .. tool))
end

-- what install must put under DESTDIR, relative to it
local function expected_files()
  local t = {
    PREFIX .. "/lib/lua/5.4/phaseprobe.so",
    PREFIX .. "/bin/phaseprobe",
    PREFIX .. "/share/lua/5.4/phaseprobe/data/demo-h200.log",
    PREFIX .. "/lib/libphaseprobe.a",
    PREFIX .. "/lib/pkgconfig/phaseprobe.pc",
  }
  for _, f in ipairs(lines_of("cd lua && find phaseprobe -name '*.lua'")) do
    t[#t + 1] = PREFIX .. "/share/lua/5.4/" .. f
  end
  -- pp_cuda.h needs cuda.h: installed only with a library that has the CUDA layer
  local ok, plan = sh(MAKE .. " -nB V=1 build/probe/clock.o")
  assert.is_true(ok, plan)
  local cuda = plan:find("-DPP_HAVE_CUDA_H", 1, true)
  for _, h in ipairs(lines_of("cd csrc/include && ls *.h")) do
    if cuda or h ~= "pp_cuda.h" then t[#t + 1] = PREFIX .. "/include/phaseprobe/" .. h end
  end
  table.sort(t)
  return t
end

describe("make install", function()
  local root, dest
  setup(function()
    root = lines_of("mktemp -d /tmp/pp-install-XXXXXX")[1]
    dest = root .. "/dest"
    local ok, out = sh(MAKE .. " install DESTDIR=" .. dest .. " PREFIX=" .. PREFIX)
    assert.is_true(ok, out)
  end)
  teardown(function()
    if root then os.execute("rm -rf " .. root) end
  end)

  it("installs the module, the Lua side, the command, the demo log, the headers, the library and the .pc", function()
    local got = lines_of("cd " .. dest .. " && find . -type f | sed 's|^\\.||'")
    assert.are.same(expected_files(), got)
    local ok, out = sh("test -x " .. dest .. PREFIX .. "/bin/phaseprobe")
    assert.is_true(ok, out)
    assert.are.equal(files.slurp("examples/data/demo-h200.log"),
      files.slurp(dest .. PREFIX .. "/share/lua/5.4/phaseprobe/data/demo-h200.log"))
  end)

  it("builds a C runtime through pkg-config that prints reference-format lines", function()
    if not have("pkg-config") then
      pending("pkg-config not installed (Debian package pkg-config)")
      return
    end
    local pc = "PKG_CONFIG_SYSROOT_DIR=" .. dest .. " PKG_CONFIG_LIBDIR=" .. dest .. PREFIX .. "/lib/pkgconfig"
    local ok, out = sh(pc .. " pkg-config --modversion phaseprobe")
    assert.is_true(ok, out)
    assert.are.equal(files.slurp("csrc/include/phaseprobe.h"):match('#define PP_VERSION "([^"]+)"'),
      (out:gsub("%s+$", "")))
    -- directories the .pc names outside the install (the CUDA headers the
    -- library was built with) are the target system's: linked into DESTDIR,
    -- which stands for it
    ok, out = sh("PKG_CONFIG_LIBDIR=" .. dest .. PREFIX .. "/lib/pkgconfig pkg-config --cflags phaseprobe")
    assert.is_true(ok, out)
    for dir in out:gmatch("%-I(%S+)") do
      if not sh("test -d " .. dest .. dir) then
        os.execute("mkdir -p " .. dest .. dir:match("^(.*)/[^/]*$") .. " && ln -sfn " .. dir .. " " .. dest .. dir)
      end
    end
    -- the example alone in a folder of its own: every header comes from the install
    os.execute("mkdir -p " .. root .. "/c && cp examples/c_dispatch.c " .. root .. "/c/")
    local san = os.getenv("PHASEPROBE_SANITIZED") and " -fsanitize=address,undefined" or ""
    ok, out = sh("cd " .. root .. "/c && cc -Wall -Wextra c_dispatch.c $(" .. pc
      .. " pkg-config --cflags --libs phaseprobe)" .. san .. " -o c_dispatch")
    assert.is_true(ok, out)
    local p = io.popen("PHASEPROBE=1 " .. root .. "/c/c_dispatch 3 500 2>&1 1>/dev/null")
    local lines = {}
    for l in p:lines() do lines[#lines + 1] = l end
    p:close()
    assert.are.equal(3, #lines)
    for i, l in ipairs(lines) do
      assert.truthy(l:find("^vyre%-cuda%-dispatch%-phase seq=" .. (i - 1) .. " nodes=500 "), l)
      local wall = tonumber(l:match(" wall_ns=(%d+)"))
      local named = tonumber(l:match(" named_host_ns=(%d+)"))
      local un = tonumber(l:match(" unattributed_ns=(%d+)"))
      assert.are.equal(wall, named + un)
    end
    -- each installed header compiles on its own with the .pc's flags
    for _, h in ipairs(lines_of("cd " .. dest .. PREFIX .. "/include/phaseprobe && ls *.h")) do
      ok, out = sh("printf '#include \"" .. h .. "\"\\n' | cc -fsyntax-only -Wall -Wextra -x c - $("
        .. pc .. " pkg-config --cflags phaseprobe)")
      assert.is_true(ok, h .. ": " .. out)
    end
  end)

  it("gives a command that runs the demo from another directory, without a GPU", function()
    local share = dest .. PREFIX .. "/share/lua/5.4"
    os.execute("mkdir -p " .. root .. "/elsewhere")
    local env = "cd " .. root .. "/elsewhere && PHASEPROBE_LIBCUDA=/nonexistent/libcuda.so.1"
      .. " LUA_PATH='" .. share .. "/?.lua;" .. share .. "/?/init.lua;;'"
      .. " LUA_CPATH='" .. dest .. PREFIX .. "/lib/lua/5.4/?.so;;' "
    local ok, out = sh(env .. LUA .. " -e 'print(package.searchpath(\"phaseprobe\", package.cpath))'")
    assert.is_true(ok, out)
    assert.are.equal(dest .. PREFIX .. "/lib/lua/5.4/phaseprobe.so\n", out)
    ok, out = sh(env .. LUA .. " " .. dest .. PREFIX .. "/bin/phaseprobe demo")
    assert.is_true(ok, out)
    assert.truthy(out:find("log " .. share .. "/phaseprobe/data/demo-h200.log", 1, true), out)
    assert.truthy(out:find("shape small:", 1, true), out)
  end)

  it("and make uninstall takes every file away", function()
    local ok, out = sh(MAKE .. " uninstall DESTDIR=" .. dest .. " PREFIX=" .. PREFIX)
    assert.is_true(ok, out)
    assert.are.same({}, lines_of("cd " .. dest .. " && find . -type f"))
    assert.are.same({}, lines_of("cd " .. dest .. " && find . -name '*phaseprobe*'"))
  end)
end)

describe("the default target and install", function()
  -- what make would run from scratch (-B), without running it (-n)
  local function plan(target)
    local ok, out = sh(MAKE .. " -nB " .. target .. " V=1")
    assert.is_true(ok, out)
    return out
  end

  it("build no test double, helper or benchmark, and link nothing to a fixed library path", function()
    for _, target in ipairs { "", "install" } do
      local out = plan(target)
      assert.truthy(out:find("-o phaseprobe.so", 1, true), target)
      for _, bad in ipairs { "spec/helpers/", "bench/", "examples/c_", "-rpath", "-L/" } do
        assert.is_nil(out:find(bad, 1, true), ("'%s' in the plan of make %s"):format(bad, target))
      end
    end
  end)
end)
