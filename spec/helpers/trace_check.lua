-- Checks a Chrome trace-event JSON document against the format's rules and
-- the rules the Perfetto importer enforces on complete events:
--   * the document is an object with a traceEvents array (or a bare array);
--   * every event has a known ph and the fields its ph requires;
--   * metadata events name a known kind and carry the args it needs;
--   * on one track (pid, tid) complete slices nest: two slices either do not
--     overlap or one contains the other;
-- and phaseprobe's own rule: a dispatch slice's direct children (its phases)
-- add up to its named_host_ns, and with the "unattributed" slice to its dur.
--
-- check(text) -> report { ok, errors = {...}, events, slices, tracks,
--   dispatches = { {slice, children = {...}} }, doc }
local cjson = require("cjson").new()

local M = {}

-- The phase types of the trace-event format.
local PH = {}
for p in ("B E X i I C b n e s t f P O N D M V v R c ( )"):gmatch("%S+") do PH[p] = true end

local META = {
  process_name = "name", thread_name = "name", process_labels = "labels",
  process_sort_index = "sort_index", thread_sort_index = "sort_index", process_uptime_seconds = "uptime",
}

local function is_int(v) return type(v) == "number" and math.tointeger(v) ~= nil end

-- microseconds (a JSON number) to integer nanoseconds, as Perfetto does
local function ns(v) return math.floor(v * 1000 + 0.5) end

function M.check(text)
  local rep = { ok = true, errors = {}, slices = {}, tracks = {}, dispatches = {} }
  local function fail(fmt, ...)
    rep.ok = false
    if #rep.errors < 50 then rep.errors[#rep.errors + 1] = fmt:format(...) end
  end
  local okj, doc = pcall(cjson.decode, text)
  if not okj then
    fail("not JSON: %s", tostring(doc))
    return rep
  end
  rep.doc = doc
  local events = doc
  if type(doc) == "table" and doc.traceEvents ~= nil then events = doc.traceEvents end
  if type(events) ~= "table" then
    fail("no traceEvents array")
    return rep
  end
  rep.events = events
  for i, ev in ipairs(events) do
    local where = ("event %d"):format(i)
    if type(ev) ~= "table" then
      fail("%s: not an object", where)
      goto continue
    end
    if type(ev.ph) ~= "string" or not PH[ev.ph] then
      fail("%s: ph %s is not a trace-event phase type", where, tostring(ev.ph))
      goto continue
    end
    if type(ev.name) ~= "string" then fail("%s: name missing or not a string", where) end
    if not is_int(ev.pid) then fail("%s (%s): pid missing or not an integer", where, tostring(ev.name)) end
    if ev.args ~= nil and type(ev.args) ~= "table" then fail("%s: args is not an object", where) end
    if ev.ph == "M" then
      local need = META[ev.name]
      if not need then
        fail("%s: metadata event of unknown kind '%s'", where, tostring(ev.name))
      elseif type(ev.args) ~= "table" or ev.args[need] == nil then
        fail("%s: metadata '%s' without args.%s", where, ev.name, need)
      elseif need == "sort_index" and not is_int(ev.args.sort_index) then
        fail("%s: args.sort_index is not an integer", where)
      elseif ev.name:match("^thread_") and not is_int(ev.tid) then
        fail("%s: thread metadata without an integer tid", where)
      end
    else
      if type(ev.ts) ~= "number" or ev.ts < 0 then fail("%s (%s): ts missing or negative", where, tostring(ev.name)) end
      if not is_int(ev.tid) then fail("%s (%s): tid missing or not an integer", where, tostring(ev.name)) end
      if ev.ph == "X" then
        if type(ev.dur) ~= "number" or ev.dur < 0 then
          fail("%s (%s): complete event without a non-negative dur", where, tostring(ev.name))
        elseif type(ev.ts) == "number" and is_int(ev.pid) and is_int(ev.tid) then
          local s = { i = i, ev = ev, start = ns(ev.ts), dur = ns(ev.dur), name = ev.name }
          s.stop = s.start + s.dur
          rep.slices[#rep.slices + 1] = s
          local key = math.tointeger(ev.pid) .. "/" .. math.tointeger(ev.tid)
          rep.tracks[key] = rep.tracks[key] or {}
          table.insert(rep.tracks[key], s)
        end
      end
    end
    ::continue::
  end

  -- nesting per track
  for key, list in pairs(rep.tracks) do
    table.sort(list, function(a, b)
      if a.start ~= b.start then return a.start < b.start end
      if a.dur ~= b.dur then return a.dur > b.dur end
      return a.i < b.i
    end)
    local stack = {}
    for _, s in ipairs(list) do
      while #stack > 0 and stack[#stack].stop <= s.start do stack[#stack] = nil end
      local top = stack[#stack]
      if top and s.stop > top.stop then
        fail("track %s: '%s' [%d, %d) overlaps '%s' [%d, %d) without nesting", key, s.name, s.start, s.stop,
          top.name, top.start, top.stop)
      end
      s.parent = top
      s.depth = #stack
      if top then
        top.children = top.children or {}
        table.insert(top.children, s)
      end
      stack[#stack + 1] = s
    end
  end

  -- dispatch sums
  for _, s in ipairs(rep.slices) do
    if s.name == "dispatch" then
      local named = s.ev.args and s.ev.args.named_host_ns
      local phases, all = 0, 0
      for _, c in ipairs(s.children or {}) do
        all = all + c.dur
        if c.name ~= "unattributed" then phases = phases + c.dur end
      end
      rep.dispatches[#rep.dispatches + 1] = { slice = s, children = s.children or {}, phases = phases }
      if not is_int(named) then
        fail("dispatch (event %d): args.named_host_ns missing", s.i)
      elseif phases ~= math.tointeger(named) then
        fail("dispatch (event %d, seq %s): phase slices add to %d ns, named_host_ns is %d", s.i,
          tostring(s.ev.args.seq), phases, math.tointeger(named))
      end
      if all ~= s.dur then
        fail("dispatch (event %d): child slices add to %d ns, the dispatch lasts %d", s.i, all, s.dur)
      end
      if s.depth ~= 0 then fail("dispatch (event %d) is nested inside '%s'", s.i, s.parent.name) end
    end
  end
  return rep
end

return M
