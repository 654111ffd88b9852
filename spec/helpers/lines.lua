-- A private reader for record lines in the specs (the library reads logs with
-- pp.parse): "prefix k=v k=v ..." -> records whose _fields are the line's keys.
local recview = require "phaseprobe.recview"

local M = {}

function M.parse(text)
  local out = {}
  for line in text:gmatch("[^\n]+") do
    local prefix, rest = line:match("^(%S+)(.*)$")
    local r, keys = {}, {}
    for k, v in rest:gmatch("%s([%w_]+)=(%S*)") do
      keys[#keys + 1] = k
      r[k] = v:match("^%d+$") and recview.parse_u64(v) or v
    end
    out[#out + 1] = setmetatable(r, recview.record_mt(prefix, keys))
  end
  return out
end

return M
