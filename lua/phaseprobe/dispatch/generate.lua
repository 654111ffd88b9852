-- phaseprobe.dispatch.generate: programs of a given size, and their inputs.
-- Installs into phaseprobe.dispatch.program (which loads it):
--
--   P.generate{nodes=, barriers=0, type="u32", seed=1, name=, fixpoint=1,
--              window=8} -> program with exactly `nodes` nodes
--   P.inputs(prog, n, seed) -> deterministic input arrays
--   P.rng(seed)             -> the splitmix64 generator they use
--
-- Where it sits: the demo and the benchmarks make their programs here; the
-- dispatcher dispatches them, the CPU evaluation (dispatch/eval.lua) checks
-- their outputs.
return function(M)
  local f32, TYPES = M.f32, M.TYPES

  -- splitmix64 on Lua integers (wrapping arithmetic)
  local function rng_new(seed)
    local state = seed or 1
    return function()
      state = state + 0x9E3779B97F4A7C15
      local z = state
      z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
      z = (z ~ (z >> 27)) * 0x94D049BB133111EB
      return z ~ (z >> 31)
    end
  end
  M.rng = rng_new

  local function below(r, n) -- uniform-ish integer in [0, n)
    return (r() >> 1) % n
  end

  --- P.generate{nodes=, barriers=0, type="u32", seed=1, name=, fixpoint=1,
  ---            window=8} -> program with exactly `nodes` nodes.
  --- Buffers: in0, in1 (input), state (inout), out (output) and, with
  --- barriers, pa and pb (output) written in alternate stages and read at a
  --- nonzero shift in the next one, so every barrier carries data across
  --- blocks. The last stage stores out and state.
  function M.generate(o)
    o = o or {}
    local nodes = o.nodes or 64
    local barriers = o.barriers or 0
    local tyname = o.type or "u32"
    local name = o.name or string.format("gen_%d_%d", nodes, barriers)
    if not TYPES[tyname] then
      error(string.format("phaseprobe.dispatch.program.generate: unknown type '%s' (types: u32, i32, f32)", tostring(tyname)), 2)
    end
    if math.type(barriers) ~= "integer" or barriers < 0 then
      error("phaseprobe.dispatch.program.generate: barriers must be a non-negative integer", 2)
    end
    local stages = barriers + 1
    -- per stage at least one store of a 3-node value (4 nodes), the last stage two
    local min_nodes = stages * 4 + 4 + barriers
    if math.type(nodes) ~= "integer" or nodes < min_nodes then
      local count = require("phaseprobe.output.report").count
      error(string.format("phaseprobe.dispatch.program.generate: nodes must be an integer >= %s "
        .. "for %s, got %s", count(min_nodes), count(barriers, "barrier"), tostring(nodes)), 2)
    end
    local r = rng_new(o.seed or 1)
    local window = o.window or 8
    local isf = tyname == "f32"
    local ops2 = isf and { "add", "sub", "mul", "min", "max" } or { "add", "sub", "mul", "min", "max", "xor" }

    local function const()
      if isf then
        return M.const(0.5 + below(r, 1024) / 1024, "f32")
      elseif tyname == "i32" then
        return M.const(below(r, 2001) - 1000, "i32")
      end
      return M.const((r() & 0xFFFFFFFF) | 1, "u32")
    end

    local lets = {}
    local nlet = 0
    local buffers = {
      { name = "in0", type = tyname, role = "input" },
      { name = "in1", type = tyname, role = "input" },
      { name = "state", type = tyname, role = "inout" },
      { name = "out", type = tyname, role = "output" },
    }
    if barriers > 0 then
      buffers[#buffers + 1] = { name = "pa", type = tyname, role = "output" }
      buffers[#buffers + 1] = { name = "pb", type = tyname, role = "output" }
    end

    -- a few neighbour offsets per program, as real kernels have
    local in_shifts = { 0, 0, 1 + below(r, 1 << 20), 1 + below(r, 1 << 20) }
    local prev_shifts = { 1 + below(r, 1 << 20), 1 + below(r, 1 << 20) }
    local stage_prev -- buffer written by the previous stage
    local function leaf()
      local k = below(r, 10)
      if k < 3 and nlet > 0 then
        local lo = math.max(1, nlet - window + 1)
        return M.ref(lets[lo + below(r, nlet - lo + 1)])
      elseif k < 5 then
        return M.load(k == 3 and "in0" or "in1", in_shifts[1 + below(r, 4)])
      elseif k < 6 and stage_prev then
        return M.load(stage_prev, prev_shifts[1 + below(r, 2)])
      elseif k < 7 then
        return M.load("state")
      elseif k < 8 and not isf then
        return M.gid()
      end
      return const()
    end

    -- Part sizes of a tree are 1 or >= 3: no operator has one operand.
    local function split2(m) -- m == 2 or m >= 4
      if m == 2 then return 1, 1 end
      local l = 1 + below(r, m - 1)
      if l == 2 then l = 1 end
      if m - l == 2 then l = m - 1 end
      return l, m - l
    end
    local function split3(m) -- m == 3 or m >= 5
      local p1 = 1 + below(r, m - 2)
      if p1 == 2 or m - p1 == 3 then p1 = 1 end
      return p1, split2(m - p1)
    end

    -- a tree with exactly `size` nodes (size == 1 or size >= 3)
    local function tree(size)
      if size == 1 then return leaf() end
      local m = size - 1
      if m == 3 or (m >= 5 and below(r, 6) == 0) then
        local p1, p2, p3 = split3(m)
        return M.fma(tree(p1), tree(p2), tree(p3))
      end
      local l, rr = split2(m)
      local op = ops2[1 + below(r, #ops2)]
      return M[op](tree(l), tree(rr))
    end

    -- split `budget` nodes of one stage into lets and the final store(s)
    local body = {}
    local total = nodes - barriers
    local base = (total - 4) // stages -- every stage >= 4 nodes, the last >= 8
    for s = 0, barriers do
      local last = s == barriers
      local budget = last and (total - base * barriers) or base
      local store_sizes
      local reserve = last and 8 or 4
      while budget - reserve > 24 do
        local size = 12 + below(r, 12) -- let: 1 + tree
        local value = tree(size - 1)
        nlet = nlet + 1
        local lname = "t" .. nlet
        body[#body + 1] = M.let(lname, value)
        lets[nlet] = lname
        budget = budget - size
      end
      if last then
        -- store state (1 + tree) and out (1 + tree); each tree >= 3 nodes
        local half = budget // 2
        store_sizes = { half, budget - half }
      else
        store_sizes = { budget }
      end
      local targets = last and { "state", "out" } or { (s % 2 == 0) and "pa" or "pb" }
      for k, size in ipairs(store_sizes) do
        body[#body + 1] = M.store(targets[k], tree(size - 1)) -- size >= 4
      end
      if not last then
        body[#body + 1] = M.barrier()
        stage_prev = (s % 2 == 0) and "pa" or "pb"
      end
    end
    local prog = M.new{ name = name, buffers = buffers, body = body, fixpoint = o.fixpoint or 1 }
    if prog.nodes ~= nodes then
      error(string.format("phaseprobe.dispatch.program.generate: internal error, %d nodes instead of %d", prog.nodes, nodes))
    end
    return prog
  end

  --- P.inputs(prog, n, seed) -> {name = array} for every input and inout
  --- buffer: n deterministic values of the buffer's type.
  function M.inputs(prog, n, seed)
    local r = rng_new((seed or 7) * 0x100000001B3 + n)
    local out = {}
    for _, bd in ipairs(prog.buffers) do
      if bd.role ~= "output" then
        local t = {}
        for i = 1, n do
          if bd.type == "u32" then
            t[i] = r() & 0xFFFFFFFF
          elseif bd.type == "i32" then
            t[i] = ((r() & 0xFFFFFFFF) ~ 0x80000000) - 0x80000000
          else
            t[i] = f32((below(r, 1 << 20) / (1 << 19)) - 1.0)
          end
        end
        out[bd.name] = t
      end
    end
    return out
  end

end
