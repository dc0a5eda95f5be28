-- A show's meta: {0} no show, else {1, epoch, open, lost}.
local m = redis.call('HMGET', META, 'epoch', 'open', 'lost', 'deleted')
if m[4] or not m[1] then return {0} end
return {1, tonumber(m[1]), m[2] == '1' and 1 or 0, m[3] == '1' and 1 or 0}
