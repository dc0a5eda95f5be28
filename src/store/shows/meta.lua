-- A show's meta: {} when there is no show, else {show = {epoch, open, lost, lanes, page}},
-- `lanes` whether the settings in force list lanes a code joins (the page asks for a code
-- then), `page` the version of the show's own waiting page, when it has one.
local m = redis.call('HMGET', META, 'epoch', 'open', 'lost', 'deleted', 'in_force', 'settings')
if m[4] or not m[1] then return {} end
local text = m[5] or m[6] or ''
return {show = {epoch = m[1], open = m[2] == '1', lost = m[3] == '1',
  lanes = string.find(text, '"lanes":[{', 1, true) ~= nil,
  page = redis.call('HGET', page_key(), 'version') or nil}}
