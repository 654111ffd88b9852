--- bench/parse.lua: record-line parsing and analysis at scale.
--
--   lua5.4 bench/parse.lua [records]        (default 1000000; make bench runs it)
--
-- Writes a log of our full record lines (36 fields and two tags, about 700
-- bytes a line) to /tmp, then measures in the same run:
--   * the C parser (pp.parse.file) on the whole log, in MB/s;
--   * on a prefix of the log, the C parser beside a pure-Lua gmatch parser
--     (same rules: prefix word, then name=value fields into a table), as
--     the ratio C / Lua;
--   * summing one field (wall_ns) over the whole log in a fresh process each
--     time, both sides whole processes, in alternating rounds: the C parser
--     (lua5.4 loading the module, parse, column sum) against awk (mawk or
--     gawk, whichever `awk` is) tuned for the job (it finds " wall_ns=" in
--     the line with index(), no field splitting), and the per-field loop
--     this bench used to time, for the record;
--   * in a fresh process: parse + group by shape + scaling verdicts for every
--     phase against every quantity, in seconds, and the peak memory that
--     took (VmHWM delta) and the store's own bytes, per record;
--   * for comparison, Lua tables of integers per column on the prefix
--     (collectgarbage("count") delta per record).
-- In-process figures are medians of alternating rounds (bench/rounds.lua),
-- page cache warm for every side. Prints figures and ratios; asserts
-- nothing about time.
local rounds = dofile(((arg and arg[0] or ""):match("^(.*)/[^/]*$") or ".") .. "/rounds.lua")
local pp = rounds.start()
local here = rounds.here

local function now() return pp.now() / 1e9 end

local function hwm_kib()
  for l in io.lines("/proc/self/status") do
    local v = l:match("^VmHWM:%s+(%d+) kB")
    if v then return tonumber(v) end
  end
  return 0
end

-- ---- the measured child: parse, group, fit ------------------------------------
if arg[1] == "--child" then
  local path = arg[2]
  collectgarbage("collect")
  local base_hwm, base_lua = hwm_kib(), collectgarbage("count")
  local t0 = now()
  local set, rep = pp.records.read(path)
  local t1 = now()
  local groups = set:group("shape")
  local t2 = now()
  local s = require("phaseprobe.analysis.analyze").scaling(set)
  local t3 = now()
  local n = set:count()
  local hwm = hwm_kib()
  local verdicts = {}
  for _, v in ipairs(s.phases) do verdicts[#verdicts + 1] = v.name .. ": " .. v.verdict end
  io.write(string.format("child records=%d rejected=%d parse_s=%.3f group_s=%.3f fit_s=%.3f "
    .. "total_s=%.3f groups=%d hwm_delta_bytes_per_record=%.1f store_bytes_per_record=%.1f "
    .. "lua_kib_delta=%.0f fits=%d\n",
    n, rep.rejected, t1 - t0, t2 - t1, t3 - t2, t3 - t0, #groups,
    (hwm - base_hwm) * 1024 / n, set:bytes() / n, collectgarbage("count") - base_lua,
    (#s.phases + #s.nested) * #s.quantities))
  io.write("child verdicts ", table.concat(verdicts, "; "), "\n")
  os.exit(0)
end

local N = math.tointeger(tonumber(arg[1] or "")) or 1000000
local PREFIX_N = math.min(N, 100000)
local path = string.format("/tmp/phaseprobe-bench-%d.log", N)
local prefix_path = string.format("/tmp/phaseprobe-bench-%d-prefix.log", N)

-- ---- the log ------------------------------------------------------------------
local NODES = { 500, 1000, 2000, 4000, 8000, 12410 }
local SHAPES = { "prose", "code", "cjk" }

local function line(i)
  local nodes = NODES[i % #NODES + 1]
  local j = (i * 2654435761) % 1000 -- deterministic jitter
  local prepare, modkey, stage = 4000 + j, 900 + j % 50, 20000 + j * 3
  local digest, vsa = 79 * nodes + j, 41 * nodes + j
  local ptx = digest + vsa + 3000 + j
  local resolve, lease, launch = 15000 + j, 30 * nodes + j, 9000 + j
  local release, readback = 60000 + j * 5, 8000 + j
  local named = prepare + ptx + modkey + stage + resolve + lease + launch + release + readback
  local wall = named + 500 + j
  local miss = (i % 97 == 0) and 1 or 0
  return string.format("vyre-cuda-dispatch-phase seq=%d nodes=%d ptx_bytes=%d buffers=4 "
    .. "bindings=%d fixpoint=1 grid_blocks=%d wall_ns=%d enqueue_ns=%d wait_ns=%d "
    .. "device_window_ns=%d kernel_ns=%d prepare_ns=%d ptx_ns=%d modkey_ns=%d stage_ns=%d "
    .. "resolve_ns=%d lease_ns=%d launch_ns=%d release_ns=%d readback_ns=%d sub_ptx_digest_ns=%d "
    .. "sub_ptx_vsa_ns=%d named_host_ns=%d unattributed_ns=%d ptx_cache_hits=%d "
    .. "ptx_cache_misses=%d ptx_cache_disk_hits=0 tid=%d start_ns=%d probe_ns=%d "
    .. "kernel_src=event kernel_floor_ns=1300 knob=none shape=%s",
    i, nodes, nodes * 314, 4 + i % 3, 66 * (1 + i % 4), wall, wall - release - readback,
    release + readback, 250000 + j * 10, 200000 + j * 7, prepare, ptx, modkey, stage, resolve,
    lease, launch, release, readback, digest, vsa, named, wall - named, 1 - miss, miss,
    100000 + i % 8, 1000000000 + i * 250000, 1100 + j % 300, SHAPES[i % 3 + 1])
end

local function write_log(file, n)
  local f = assert(io.open(file, "w"))
  local buf = {}
  for i = 1, n do
    buf[#buf + 1] = line(i)
    if #buf == 10000 then
      buf[#buf + 1] = "" -- the trailing newline of the batch
      f:write(table.concat(buf, "\n"))
      buf = {}
    end
  end
  if #buf > 0 then buf[#buf + 1] = ""; f:write(table.concat(buf, "\n")) end
  f:close()
end

local t = now()
write_log(path, N)
write_log(prefix_path, PREFIX_N)
local size = assert(io.open(path)):seek("end")
local psize = assert(io.open(prefix_path)):seek("end")
print(string.format("log: %d records, %.1f MB (%s), written in %.1f s", N, size / 1e6, path, now() - t))

-- ---- the C parser on the whole log, warm, in this process -------------------
print(rounds.clock_note(pp))
do -- warm the page cache
  local f = assert(io.open(path, "rb"))
  while f:read(1 << 24) do end
  f:close()
end

local function c_parse(file)
  local c = pp.parse.file(file)
  local n = c:count()
  c:close()
  return n
end
local cols
local full = rounds.run({
  { name = "C parser, whole log", run = function() cols = c_parse(path) end },
}, 3, 1, function() return pp.now() / 1e9 end)[1]
assert(cols == N, "parsed " .. tostring(cols) .. " of " .. N)
print(string.format("C parser, whole log, warm:   %8.1f MB/s  (median %.3f s, min %.3f, max %.3f; %d records)",
  size / 1e6 / full.median, full.median, full.min, full.max, N))

-- ---- C parser vs a pure-Lua gmatch parser on the prefix, both warm ---------
local function lua_parse(file)
  local n, sum = 0, 0
  for l in io.lines(file) do
    local pre, rest = l:match("^(%S+)%s+(.*)$")
    if pre and rest:match("^[%w_]+=") then
      local r = {}
      for k, v in rest:gmatch("([%w_]+)=(%S+)") do r[k] = math.tointeger(tonumber(v)) or v end
      n = n + 1
      sum = sum + r.wall_ns
    end
  end
  return n, sum
end
local pre = rounds.run({
  { name = "C parser", run = function() c_parse(prefix_path) end },
  { name = "Lua gmatch parser", run = function() lua_parse(prefix_path) end },
}, 3, 1, function() return pp.now() / 1e9 end)
print(string.format("C parser, %d-record prefix: %8.1f MB/s (median of 3 alternating rounds)", PREFIX_N,
  psize / 1e6 / pre[1].median))
print(string.format("Lua gmatch parser, prefix:  %8.1f MB/s", psize / 1e6 / pre[2].median))
print(string.format("ratio C / Lua:              %8.1fx", pre[2].median / pre[1].median))

-- ---- one field summed over the whole log: whole processes on both sides ----
local lua = arg[-1] or "lua5.4"
local awk = io.popen("readlink -f \"$(command -v awk)\""):read("l") or "awk"
local c_cmd = string.format("%s -e 'package.cpath = %q .. package.cpath; "
  .. "local c = require(\"phaseprobe\").parse.file(%q); "
  .. "io.write(string.format(\"%%.0f\", c:summary(\"wall_ns\").sum))'",
  lua, here .. "/../?.so;", path)
local awk_tuned = "awk '{ i = index($0, \" wall_ns=\"); if (i) s += substr($0, i + 9) } "
  .. "END { printf \"%.0f\", s }' " .. path
local awk_loop = "awk '{for(i=2;i<=NF;i++) if(substr($i,1,8)==\"wall_ns=\"){s+=substr($i,9);break}} "
  .. "END{printf \"%.0f\", s}' " .. path
local sums = {}
local function proc(name, cmd)
  return { name = name, run = function()
    local p = io.popen(cmd)
    sums[name] = tonumber(p:read("a"))
    p:close()
  end }
end
local procs = rounds.run({
  proc("C parser (lua5.4 + module), a process", c_cmd),
  proc("awk, tuned (index, no field split), a process", awk_tuned),
  proc("awk, a loop over every field, a process", awk_loop),
}, 5, 1, function() return pp.now() / 1e9 end)
local agree = true
for _, v in pairs(sums) do
  agree = agree and math.abs(v - sums[procs[1].name]) <= 1e-9 * v
end
print(string.format("wall_ns summed over the whole log, each a fresh process, 5 alternating rounds "
  .. "(awk is %s; sums agree: %s):", awk, tostring(agree)))
for _, v in ipairs(procs) do
  print(string.format("  %-48s %8.1f MB/s  (median %.3f s, min %.3f, max %.3f)", v.name,
    size / 1e6 / v.median, v.median, v.min, v.max))
end
print(string.format("C parser / tuned awk, time of whole processes: %.2fx (awk finds one field; "
  .. "the parser stores every field of every line in columns)", procs[1].median / procs[2].median))

-- ---- storage: Lua tables of integers per column, on the prefix ---------------
collectgarbage("collect")
local before = collectgarbage("count")
local columns = {}
do
  local n = 0
  for l in io.lines(prefix_path) do
    n = n + 1
    for k, v in l:gmatch("([%w_]+)=(%S+)") do
      local col = columns[k]
      if not col then col = {}; columns[k] = col end
      col[n] = math.tointeger(tonumber(v)) or v
    end
  end
end
collectgarbage("collect")
local lua_cols = (collectgarbage("count") - before) * 1024 / PREFIX_N
columns = nil
collectgarbage("collect")
local pset = pp.records.read(prefix_path)
print(string.format("storage per record, prefix: C columns %.1f bytes, Lua tables per column %.1f bytes",
  pset:bytes() / pset:count(), lua_cols))

-- ---- parse + group + fit in a fresh process ---------------------------------
local p = io.popen(string.format("%s %s --child %s", lua, arg[0], path))
local out = p:read("a")
p:close()
io.write(out)
local total = tonumber(out:match("total_s=([%d.]+)"))
local per = tonumber(out:match("hwm_delta_bytes_per_record=([%d.]+)"))
if total then
  print(string.format("parse+group+fit %d records: %.2f s; peak memory %.1f bytes per record", N, total, per))
end
os.remove(path)
os.remove(prefix_path)
