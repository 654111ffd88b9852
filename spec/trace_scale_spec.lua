-- The trace of a log larger than its limit: the first, last and slowest
-- dispatches drawn in full, every dispatch in the counter tracks, and what
-- was left out said on stderr and in the metadata; --all and --limit.
local tc = require "helpers.trace_check"
local matches_all = require("helpers.text").matches_all
local gen = dofile("bench/gen_log.lua")

local command = require "helpers.command"
local run = command.run

local LOG = os.tmpname()
local N = 1200

setup(function() gen.write(LOG, N, { extra = true }) end)
teardown(function() os.remove(LOG) end)

local function walls()
  local out = {}
  for l in io.lines(LOG) do out[#out + 1] = tonumber(l:match(" wall_ns=(%d+)")) end
  return out
end

describe("phaseprobe trace on a log past its limit", function()
  it("draws the first, the last and the slowest in full, and says what it left out", function()
    local rc, out, err = run("trace", "--limit", "100", LOG)
    assert.are.equal(0, rc, err)
    local rep = tc.check(out)
    assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
    assert.are.equal(100, #rep.dispatches)
    local seqs = {}
    for _, d in ipairs(rep.dispatches) do seqs[math.tointeger(d.slice.ev.args.seq)] = true end
    for i = 1, 10 do assert.is_true(seqs[i], "first " .. i) end
    for i = N - 9, N do assert.is_true(seqs[i], "last " .. i) end
    -- the 80 slowest of the others, by wall
    local w = walls()
    local order = {}
    for i = 11, N - 10 do order[#order + 1] = i end
    table.sort(order, function(a, b) return w[a] > w[b] or (w[a] == w[b] and a < b) end)
    for k = 1, 80 do assert.is_true(seqs[order[k]], "slow " .. order[k]) end
    assert.is_nil(seqs[order[81]])
    -- the generated outliers (7 to 14 ms) are among them
    assert.is_true(seqs[7])
    local run1 = rep.doc.metadata.phaseprobe.runs[1]
    assert.are.equal(N, math.tointeger(run1.records))
    assert.are.equal(100, math.tointeger(run1.drawn_in_full))
    assert.matches("the first 10, the last 10 and the 80 slowest", run1.selection)
    err = err:gsub("\n", " ")
    matches_all(err, { "1,200 dispatches; drawn in full: the first 10, the last 10 and the 80 slowest",
      "%-%-all draws every dispatch", "%-%-limit N", "%-%-where" })
  end)

  it("puts every dispatch in the counter tracks", function()
    local _, out = run("trace", "--limit", "100", LOG)
    local rep = tc.check(out)
    local n, sum = 0, 0
    for _, ev in ipairs(rep.events) do
      if ev.ph == "C" and ev.name == "ptx (mean ns per dispatch)" then
        n = n + 1
        sum = sum + ev.args.ns
      end
    end
    assert.is_true(n >= 100, n .. " counter events")
    assert.matches("mean ns per dispatch", rep.doc.metadata.phaseprobe.counters)
  end)

  it("draws everything with --all, and says nothing about left out dispatches", function()
    local rc, out, err = run("trace", "--all", LOG)
    assert.are.equal(0, rc)
    assert.are.equal("", err)
    local rep = tc.check(out)
    assert.is_true(rep.ok, table.concat(rep.errors, "\n"))
    assert.are.equal(N, #rep.dispatches)
  end)

  it("selects with --where before it draws", function()
    local rc, out = run("trace", "--where", "shape=large", "--all", LOG)
    assert.are.equal(0, rc)
    local rep = tc.check(out)
    assert.are.equal(N // 3, #rep.dispatches)
    for _, d in ipairs(rep.dispatches) do assert.are.equal("large", d.slice.ev.args.shape) end
  end)

  it("refuses --all with --limit, and a --limit that is not a count", function()
    assert.are.equal(2, (run("trace", "--all", "--limit", "5", LOG)))
    assert.are.equal(2, (run("trace", "--limit", "none", LOG)))
  end)
end)
