-- A show's meta: {} when there is no show, else {show = {epoch, open, lost}}.
local m = redis.call('HMGET', META, 'epoch', 'open', 'lost', 'deleted')
if m[4] or not m[1] then return {} end
return {show = {epoch = m[1], open = m[2] == '1', lost = m[3] == '1'}}
