-- The line sink never blocks, signals or kills the process it lives in:
-- FIFOs whose reader exits or stops reading, a FIFO with no reader at all,
-- sockets (through build/sink_helper), and a file whose writes stall (an
-- LD_PRELOAD'd write that sleeps). Each scenario runs in a child process,
-- under `timeout`, so a hang or a signal death shows as a failure here.
local files = require "spec.helpers.files"
-- the interpreter for child processes (make tsan runs them in its own)
local LUA = os.getenv("PHASEPROBE_LUA") or "lua5.4"

local function sh_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function run(cmd)
  local p = io.popen(cmd .. " 2>&1; echo \"exit=$?\"")
  local out = p:read("a")
  p:close()
  return out, tonumber(out:match("exit=(%d+)%s*$"))
end

-- Runs a Lua script in a fresh interpreter (module from the checkout) with
-- the given arguments, at most `limit` seconds. `pp` is the module.
local function run_lua(script, args, limit, env)
  local path = os.tmpname()
  files.spit(path, 'package.cpath = "./?.so;" .. package.cpath\nlocal pp = require "phaseprobe"\n' .. script)
  local out, code = run(("%s timeout %d %s %s %s"):format(env or "", limit or 20, LUA, path,
    table.concat(args or {}, " ")))
  os.remove(path)
  return out, code
end

local function tmpfifo()
  local path = os.tmpname()
  os.remove(path)
  assert(os.execute("mkfifo " .. sh_quote(path)))
  return path
end

-- In the child: pp.sink(fifo) until the reader has the FIFO open.
local OPEN_WHEN_READ = [[
local function open_sink(path, opts)
  for _ = 1, 500 do
    local ok, err = pp.sink(path, opts)
    if ok then return true end
    if not err:find("no reader", 1, true) then error(err) end
    os.execute("sleep 0.01")
  end
  error("the reader never opened " .. path)
end
]]

describe("a FIFO sink", function()
  it("with no reader: pp.sink returns nil and a message at once, never waits in open()", function()
    local fifo = tmpfifo()
    local out, code = run_lua([[
      local ok, err = pp.sink(arg[1])
      print("ok=" .. tostring(ok) .. " err=" .. tostring(err))
    ]], { fifo }, 10)
    os.remove(fifo)
    assert.equal(0, code, out)
    assert.truthy(out:find("ok=nil err=phaseprobe.sink: cannot open '" .. fifo .. "': no reader", 1, true), out)
  end)

  it("whose reader exits: the process lives on, the lost lines are counted and said once", function()
    local fifo = tmpfifo()
    local out, code = run_lua(OPEN_WHEN_READ .. [[
      pp.enable(); pp.store.enable(false)
      local rd = io.popen("head -n 2 " .. arg[1] .. " > /dev/null; echo reader-gone")
      open_sink(arg[1])
      for i = 1, 20 do pp.begin(); pp.emit { seq = i } end
      if pp.flush then pp.flush() end
      rd:read("a"); rd:close()
      for i = 21, 200 do pp.begin(); pp.emit { seq = i } end
      if pp.flush then pp.flush() end
      local st = pp.stats()
      print(("survived emitted=%d written=%d failures=%d error=%s"):format(st.emitted,
        st.lines_written or -1, st.line_failures, tostring(st.last_error)))
    ]], { fifo }, 20)
    os.remove(fifo)
    assert.equal(0, code, out)
    local emitted, written, failures = out:match("survived emitted=(%d+) written=(%d+) failures=(%d+)")
    assert.truthy(emitted, out)
    assert.equal(200, tonumber(emitted))
    assert.is_true(tonumber(failures) > 0, out)
    assert.equal(200, tonumber(written) + tonumber(failures), out)
    assert.truthy(out:find("error=Broken pipe", 1, true), out)
    local _, said = out:gsub("phaseprobe: ", "")
    assert.equal(1, said, out)
  end)

  it("whose reader stops reading: emit never blocks; what does not fit is dropped and counted", function()
    local fifo = tmpfifo()
    -- the reader holds the FIFO open and reads nothing
    local p = io.popen("sleep 60 < " .. sh_quote(fifo) .. " >/dev/null 2>&1 & echo $!")
    local reader = p:read("n")
    p:close()
    local out, code = run_lua(OPEN_WHEN_READ .. [[
      pp.enable(); pp.store.enable(false)
      -- a buffer larger than the pipe (64 KiB): however fast the emits come,
      -- lines are left waiting once the pipe is full
      open_sink(arg[1], { buffer = 262144 })
      local t0 = pp.now()
      for i = 1, 5000 do pp.begin(); pp.emit { seq = i } end
      local ms = (pp.now() - t0) / 1e6
      local flushed = pp.flush and pp.flush(200)
      local st = pp.stats()
      print(("returned emitted=%d written=%d dropped=%d pending=%d flushed=%s"):format(st.emitted,
        st.lines_written or -1, st.lines_dropped or -1, st.lines_pending or -1, tostring(flushed)))
    ]], { fifo }, 10)
    os.execute("kill " .. reader .. " 2>/dev/null")
    os.remove(fifo)
    assert.equal(0, code, out)
    local emitted, written, dropped, pending = out:match(
      "returned emitted=(%d+) written=(%d+) dropped=(%d+) pending=(%d+)")
    assert.truthy(emitted, out)
    assert.equal(5000, tonumber(emitted))
    assert.is_true(tonumber(dropped) > 0, out)
    assert.equal(5000, tonumber(written) + tonumber(dropped) + tonumber(pending), out)
    -- the flush could not finish against a reader that reads nothing
    assert.truthy(out:find("flushed=nil", 1, true), out)
    local _, said = out:gsub("phaseprobe: ", "")
    assert.equal(1, said, out)
  end)
end)

describe("sockets and pipes, from C threads (build/sink_helper)", function()
  -- 4 threads emit at once into a pipe, a unix socketpair, and a loopback TCP
  -- connection handed over non-blocking with small buffers (where the kernel
  -- takes part of a line); the reader exits after 3 lines, reads nothing until
  -- the end, or reads 512 bytes a millisecond. Each must return, never die of
  -- SIGPIPE, deliver whole lines in each thread's order, and account for every
  -- line: written + dropped + failed == emitted, nothing left pending.
  for _, kind in ipairs { "pipe", "socket", "tcp" } do
    for _, scenario in ipairs { "killed", "stalled", "slow" } do
      it(kind .. ", reader " .. scenario, function()
        local records = kind == "tcp" and 500 or 2000
        local out, code = run(("timeout 30 build/sink_helper %s %s 4 %d"):format(kind, scenario, records))
        assert.equal(0, code, out)
        assert.truthy(out:find("ok kind=" .. kind .. " scenario=" .. scenario .. " emitted=" .. 4 * records, 1, true), out)
        if scenario == "killed" then
          assert.truthy(tonumber(out:match("failures=(%d+)")) > 0, out)
        end
        local _, said = out:gsub("phaseprobe: ", "")
        assert.is_true(said <= 1, out)
      end)
    end
  end

  -- A burst that the buffer holds whole (64 MiB; 50,000 records of about
  -- 500 bytes, emitted flat out by one thread) is written whole, whatever
  -- the writer's pace: in batches, and with write = "record", where each
  -- line gets its own write(2) and the writer must not take a thread's
  -- buffer for every record it is woken for (it did, and ran out of room).
  for _, scenario in ipairs { "burst", "burst-record" } do
    it("pipe, a burst the buffer holds, " .. scenario .. ": nothing dropped", function()
      local out, code = run("timeout 60 build/sink_helper pipe " .. scenario .. " 1 50000")
      assert.equal(0, code, out)
      assert.truthy(out:find("ok kind=pipe scenario=" .. scenario .. " emitted=50000 received=50000 "
        .. "written=50000 dropped=0", 1, true), out)
    end)
  end

  -- Twelve threads, two records each, into a 32 KiB buffer written only at
  -- the end: each thread's two records take 0.7 KiB; the buffer is shared
  -- out in pieces of 2 to 16 KiB, so all of them fit. (It was shared out in
  -- 16 KiB pieces: two threads took it all and the other ten lost their
  -- records; with the default 1 MiB, so did every thread past the 64th.)
  it("pipe, twelve threads sharing a 32 KiB buffer: nothing dropped", function()
    local out, code = run("timeout 60 build/sink_helper pipe crowd 12 2")
    assert.equal(0, code, out)
    assert.truthy(out:find("ok kind=pipe scenario=crowd emitted=24 received=24 written=24 dropped=0", 1, true), out)
  end)

  -- #nosan: under ASan (gcc 12) a forked child can inherit the sanitizer's
  -- allocator lock held by another thread of the parent, and hang in the
  -- first allocation of the thread it starts: the sanitizer's limitation,
  -- not the module's. The plain build and valgrind run it.
  it("a forked child never writes the lines its parent buffered #nosan", function()
    local out, code = run("timeout 30 build/sink_helper pipe fork 1 100")
    assert.equal(0, code, out)
    assert.truthy(out:find("ok kind=pipe scenario=fork", 1, true), out)
    assert.truthy(out:find("received=110 ", 1, true), out)
  end)
end)

describe("a file on a stalled disk (write and open made to sleep by LD_PRELOAD)", function()
  -- after a sanitizer's runtime, when the suite runs under one
  local preload = "LD_PRELOAD='" .. ((os.getenv("LD_PRELOAD") or "") .. " build/libstall_io.so"):gsub("^ ", "") .. "' "

  it("emit never waits on the writer; flush gives up in time; the process exits", function()
    local path = os.tmpname() .. "-phaseprobe-stall"
    local out, code = run_lua([[
      pp.enable(); pp.store.enable(false)
      assert(pp.sink(arg[1], { buffer = 65536 }))
      local t0 = pp.now()
      for i = 1, 3000 do pp.begin(); pp.emit { seq = i } end
      local ok, err = pp.flush(100)
      local st = pp.stats()
      print(("returned flushed=%s pending=%d dropped=%d written=%d"):format(tostring(ok), st.lines_pending,
        st.lines_dropped, st.lines_written))
      print(err)
    ]], { path }, 20, preload .. "PHASEPROBE_STALL_MS=30000")
    os.remove(path)
    -- the writer sleeps 30 s in its first write; everything else went on
    assert.equal(0, code, out)
    assert.truthy(out:find("returned flushed=nil", 1, true), out)
    local pending, dropped, written = out:match("pending=(%d+) dropped=(%d+) written=(%d+)")
    assert.equal(0, tonumber(written), out)
    assert.is_true(tonumber(dropped) > 0, out)
    assert.equal(3000, tonumber(pending) + tonumber(dropped), out)
    assert.truthy(out:find("not written within 100 ms", 1, true), out)
  end)

  it("short writes and EINTR: every line arrives whole and in order, and is counted (#12 defect 17)", function()
    -- each write takes 1 to 7 bytes, every fifth is interrupted (stall_io.c)
    for _, mode in ipairs { "batch", "record" } do
      local path = os.tmpname() .. "-phaseprobe-short"
      local out, code = run_lua([[
        pp.enable(); pp.store.enable(false)
        assert(pp.sink(arg[1], arg[2] == "record" and { write = "record" } or nil))
        for i = 1, 300 do pp.begin(); pp.add_ns("ptx", i); pp.emit { seq = i } end
        local ok, err = pp.flush(20000)
        local st = pp.stats()
        print(("flushed=%s written=%d dropped=%d failures=%d"):format(tostring(ok), st.lines_written,
          st.lines_dropped, st.line_failures), err)
      ]], { path, mode }, 60, preload)
      local text = files.slurp(path) or ""
      os.remove(path)
      assert.equal(0, code, out)
      assert.truthy(out:find("flushed=true written=300 dropped=0 failures=0", 1, true), mode .. ": " .. out)
      -- (a line is over 400 bytes: over 100 writes each)
      assert.is_true(tonumber(out:match("stall_io: (%d+) writes cut short") or "0") > 300 * 100, out)
      local n = 0
      for line in text:gmatch("[^\n]*\n") do
        n = n + 1
        assert.truthy(line:match("^vyre%-cuda%-dispatch%-phase seq=" .. n .. " .* ptx_ns=" .. n .. " .*kernel_floor_ns=%d+\n$"),
          ("%s: line %d: %s"):format(mode, n, line))
      end
      assert.equal(300, n, mode)
      assert.equal("\n", text:sub(-1), mode)
    end
  end)

  it("an open() that hangs: pp.sink returns nil and a message within its bound", function()
    local path = os.tmpname() .. "-phaseprobe-stallopen"
    local out, code = run_lua([[
      local ok, err = pp.sink(arg[1])
      print("ok=" .. tostring(ok) .. " err=" .. tostring(err))
    ]], { path }, 20, preload .. "PHASEPROBE_STALL_MS=30000")
    os.remove(path)
    assert.equal(0, code, out)
    assert.truthy(out:find("ok=nil err=phaseprobe.sink: cannot open '" .. path
      .. "': open() did not return within 2 s", 1, true), out)
  end)

  it("a writer stuck at the last lua_close: the module stays mapped, the process lives on", function()
    -- Two threads emit to the stalled file and exit; the main thread, which
    -- emitted nothing (so nothing of its own keeps the module mapped),
    -- closes both states while the writer is asleep in write(): it cannot
    -- be joined, so the module pins itself; the process lingers past the
    -- end of the stall, when the writer runs again.
    local path = os.tmpname() .. "-phaseprobe-stall"
    local out, code = run(preload .. "PHASEPROBE_STALL_MS=5000 MULTI_STATE_LINGER_MS=3500 "
      .. "MULTI_STATE_CLOSE_IN_MAIN=1 SINK_PATH=" .. path
      .. " SINK_RECORDS=200 timeout 30 build/multi_state 2 spec/fixtures/scripts/multi_state_sink.lua")
    os.remove(path)
    assert.equal(0, code, out)
    assert.truthy(out:find("lingered 3500 ms", 1, true), out)
  end)
end)

describe("Lua states that share the module", function()
  -- Closed by the threads that used them, or by the main thread after
  -- those have exited (the module is then unloaded at the last close).
  for _, where in ipairs { "threads", "main" } do
    it("closing them (in " .. where .. ") writes every line, and no thread is left in the unloaded module",
      function()
      local path = os.tmpname()
      local out, code = run("MULTI_STATE_LINGER_MS=500 SINK_PATH=" .. path
        .. (where == "main" and " MULTI_STATE_CLOSE_IN_MAIN=1" or "")
        .. " SINK_RECORDS=5000 timeout 60 build/multi_state 2 spec/fixtures/scripts/multi_state_sink.lua")
      local text = files.slurp(path)
      os.remove(path)
      assert.equal(0, code, out)
      assert.truthy(out:find("thread 0: emitted=5000 dropped=0", 1, true), out)
      assert.truthy(out:find("thread 1: emitted=5000 dropped=0", 1, true), out)
      assert.truthy(out:find("lingered 500 ms", 1, true), out)
      local per = { ["0"] = 0, ["1"] = 0 }
      for line in text:gmatch("([^\n]*)\n") do
        local dev = line:match("^vyre%-cuda%-dispatch%-phase seq=%d+ .* kernel_floor_ns=%d+ device=(%d)$")
        assert.truthy(dev, line)
        per[dev] = per[dev] + 1
      end
      assert.equal(5000, per["0"])
      assert.equal(5000, per["1"])
      assert.equal("\n", text:sub(-1))
    end)
  end
end)

describe("when lines reach the file", function()
  local pp = require "phaseprobe"
  local path
  before_each(function()
    pp.use(pp.default_schema())
    pp.enable()
    pp.store.enable(false)
    path = os.tmpname()
  end)
  after_each(function()
    pp.sink("none")
    pp.store.enable(true)
    os.remove(path)
  end)

  local function lines_in(p) return select(2, files.slurp(p):gsub("\n", "")) end

  it("batched: not before the interval (nor a full chunk), at pp.flush at the latest", function()
    local written = pp.stats().lines_written
    assert.is_true(pp.sink(path, { interval_ms = 60000 }))
    for i = 1, 3 do pp.begin(); pp.emit { seq = i } end
    os.execute("sleep 0.2")
    assert.equal(0, lines_in(path))
    assert.is_true(pp.flush())
    assert.equal(3, lines_in(path))
    assert.equal(3, pp.stats().lines_written - written)
  end)

  it("batched: within the interval without a flush", function()
    assert.is_true(pp.sink(path, { interval_ms = 20 }))
    for i = 1, 3 do pp.begin(); pp.emit { seq = i } end
    local n = 0
    for _ = 1, 100 do -- up to 5 s: the bound is 20 ms plus scheduling
      n = lines_in(path)
      if n == 3 then break end
      os.execute("sleep 0.05")
    end
    assert.equal(3, n)
  end)

  it("write = 'record': each line written on its own as it is emitted (the reference's behaviour)", function()
    assert.is_true(pp.sink(path, { write = "record", interval_ms = 60000 }))
    for i = 1, 3 do
      pp.begin(); pp.emit { seq = i }
      local n = 0
      for _ = 1, 100 do
        n = lines_in(path)
        if n == i then break end
        os.execute("sleep 0.05")
      end
      assert.equal(i, n)
    end
  end)

  it("the writer formats each line from the record as it was emitted: schema, values, tags", function()
    -- The emitting thread leaves the record, not its line, for the writer,
    -- which formats it at the flush, after the thread has changed its schema
    -- and its tags many times: every line must still be its record's own.
    local wide = pp.schema { prefix = "wide", phases = { "a", "b", "c", "d", "e", "f", "g", "h" },
                             counts = { "n1", "n2", "n3" }, use = false }
    assert.is_true(pp.sink(path, { interval_ms = 60000 }))
    local want = {}
    for i = 1, 300 do
      if i % 3 == 0 then pp.use(wide) else pp.use(pp.default_schema()) end
      if i % 7 == 0 then pp.tag("shape", nil) else pp.tag("shape", "s" .. ("x"):rep(i % 50)) end
      pp.begin()
      pp.add_ns(i % 3 == 0 and "c" or "stage", i * 1000003)
      pp.count(i % 3 == 0 and "n2" or "nodes", i)
      want[i] = tostring(pp.emit { seq = i })
    end
    pp.use(pp.default_schema())
    pp.tag("shape", nil)
    assert.is_true(pp.flush())
    local got = {}
    for line in files.slurp(path):gmatch("([^\n]*)\n") do got[#got + 1] = line end
    assert.equal(#want, #got)
    for i = 1, #want do assert.equal(want[i], got[i]) end
    assert.truthy(got[3]:find("^wide seq=3 "))
    assert.truthy(got[1]:find(" shape=s" .. ("x"):rep(1) .. "$"))
    assert.is_nil(got[7]:find("shape=", 1, true))
  end)

  it("refuses bad options by name", function()
    local cases = {
      { { buffer = 100 }, "buffer must be an integer number of bytes from 32768" },
      { { interval_ms = 0 }, "interval_ms must be an integer from 1 to 60000" },
      { { write = "sometimes" }, "write must be 'batch' or 'record'" },
      { { bufer = 65536 }, "unknown option 'bufer' (valid: buffer, interval_ms, write)" },
      { 5, "table expected" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(pp.sink, path, c[1])
      assert.is_false(ok)
      assert.truthy(err:find("bad argument #2 to '[%w.]*sink'"), err)
      assert.truthy(err:find(c[2], 1, true), err)
    end
    local ok, err = pcall(pp.flush, -1)
    assert.is_false(ok)
    assert.truthy(err:find("timeout_ms must be from 0 to 3600000", 1, true), err)
  end)

  it("pp.stats names the sink", function()
    assert.is_true(pp.sink(path))
    assert.equal(path, pp.stats().sink)
    pp.sink("none")
    assert.equal("none", pp.stats().sink)
  end)
end)

describe("a process killed mid-run (SIGKILL)", function()
  it("leaves whole lines, in order, and loses no more than the documented bound", function()
    -- 100 records (less than the buffer holds, so none is dropped whatever
    -- the writer's pace), then a pause of 300 ms (6 intervals of 50 ms, and
    -- longer until the writer has written them), then 3000
    -- records as fast as they come (more than the 64 KiB buffer holds), then
    -- SIGKILL. The bound: what was emitted more than an interval before the
    -- kill is in the file; what is lost was held in the buffer as records
    -- (the writer formats them), so it is at most `buffer` bytes of records
    -- of 16 bytes + 8 a field + the tag text rounded up to 8 (none here);
    -- records that found no room were dropped and counted.
    local path = os.tmpname()
    local out = run_lua([[
      pp.enable(); pp.store.enable(false)
      assert(pp.sink(arg[1], { interval_ms = 50, buffer = 65536 }))
      for i = 1, 100 do pp.begin(); pp.emit { seq = i } end
      os.execute("sleep 0.3")
      -- a loaded machine (or valgrind, one thread at a time) may hold the
      -- writer off longer: the burst waits until the 100 are written
      for _ = 1, 100 do
        if pp.stats().lines_written >= 100 then break end
        os.execute("sleep 0.1")
      end
      for i = 101, 3100 do pp.begin(); pp.emit { seq = i } end
      local st = pp.stats()
      io.stdout:write(("emitted=%d dropped=%d\n"):format(st.emitted, st.lines_dropped))
      io.stdout:flush()
      local pid = io.open("/proc/self/stat"):read("n")
      os.execute("kill -KILL " .. pid)
      print("not killed")
    ]], { path }, 20)
    local text = files.slurp(path)
    os.remove(path)
    assert.is_nil(out:find("not killed", 1, true), out)
    assert.truthy(out:find("exit=137", 1, true), out) -- timeout passes on 128+9
    local emitted, dropped = out:match("emitted=(%d+) dropped=(%d+)")
    assert.truthy(emitted, out)
    emitted, dropped = tonumber(emitted), tonumber(dropped)
    assert.equal(3100, emitted)
    -- whole lines; the kernel may cut a write that a kill interrupts, but only
    -- at a page boundary of the file: the file then ends there
    local last_nl = text:match(".*()\n") or 0
    if last_nl ~= #text then
      assert.equal(0, #text % 4096, "a partial last line, the file not cut at a page boundary")
      text = text:sub(1, last_nl)
    end
    local seqs = {}
    for line in text:gmatch("([^\n]*)\n") do
      local seq = line:match("^vyre%-cuda%-dispatch%-phase seq=(%d+) .* kernel_floor_ns=%d+$")
      assert.truthy(seq, "not a whole record line: " .. line)
      seqs[#seqs + 1] = tonumber(seq)
    end
    local bytes = 16 + 8 * #require("phaseprobe").default_schema().fields
    -- the first 100 were emitted 300 ms before the kill: all written
    for i = 1, 100 do assert.equal(i, seqs[i]) end
    -- one thread: strictly in order; some of the burst may be missing
    -- (dropped when the buffer was full, or lost)
    for i = 2, #seqs do assert.is_true(seqs[i] > seqs[i - 1]) end
    local lost = emitted - dropped - #seqs
    assert.is_true(lost >= 0, ("lost %d"):format(lost))
    assert.is_true(lost * bytes <= 65536, ("lost %d records of %d bytes"):format(lost, bytes))
  end)
end)
