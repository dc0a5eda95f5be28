-- Ends the on-sale: no admissions, no gate. Returns {1}, or {-404}.
local m = redis.call('HMGET', META, 'epoch', 'deleted')
if not m[1] or m[2] then return {-404} end
if is_open() then
  redis.call('HSET', META, 'open', '0')
  publish('rate', m[1], redis.call('INCR', VER), head(), nil, 0, now_ms())
end
return {1}
