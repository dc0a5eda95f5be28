-- Following the checkout. Without A.pace: what the admitter needs, {health URL or '',
-- floor, configured rate, rate in force}. With A.pace = a new rate in force (the admitter
-- measured the checkout): sets it and publishes the new pace, {1}; or {0} when unchanged.
-- {-404}/{-503} for a show that is not served.
local epoch, refused = live_show()
if refused then return refused end
if A.pace then
  local new = tonumber(A.pace)
  if new == rate() then return {0} end
  redis.call('HSET', META, 'pace', new)
  publish('rate', epoch, redis.call('INCR', VER), head(), nil, 0, now_ms())
  return {1}
end
local m = redis.call('HMGET', META, 'health_url', 'floor')
return {m[1] or '', tostring(tonumber(m[2] or '1')), tostring(configured_rate()), tostring(rate())}
