-- A show's access codes by lane, as CODESTAT counts them: {lanes = {{lane, codes, uses_left},
-- …}}, by lane name.
local _, refused = live_show()
if refused then return refused end
local all = redis.call('HGETALL', CODESTAT)
local by, order = {}, {}
for i = 1, #all, 2 do
  local what, lane = string.match(all[i], '^(%a+):(.+)$')
  if lane then
    if not by[lane] then
      by[lane] = {lane = lane, codes = 0, uses_left = 0}
      order[#order + 1] = lane
    end
    if what == 'codes' then by[lane].codes = tonumber(all[i + 1]) end
    if what == 'uses' then by[lane].uses_left = tonumber(all[i + 1]) end
  end
end
table.sort(order)
local out = {}
for _, lane in ipairs(order) do
  if by[lane].codes > 0 then out[#out + 1] = by[lane] end
end
return {lanes = out}
