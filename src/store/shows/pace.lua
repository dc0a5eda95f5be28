-- Following the checkout. Without A.pace: what the admitter needs, {health_url (absent:
-- none), floor, configured (rate), current (rate in force)}. With A.pace = a new rate in
-- force, measured at A.url (the admitter checked the checkout): sets it and publishes the
-- new pace; answers {changed}. A check of a URL the show no longer names (the operator
-- cleared or changed it while the check ran) changes nothing: its pace would stay for good.
local epoch, refused = live_show()
if refused then return refused end
if A.pace then
  if redis.call('HGET', META, 'health_url') ~= A.url then return {changed = false} end
  local new = tonumber(A.pace)
  if new == rate() then return {changed = false} end
  redis.call('HSET', META, 'pace', new)
  publish('rate', epoch, redis.call('INCR', VER), head(), nil, 0, now_ms())
  return {changed = true}
end
local m = redis.call('HMGET', META, 'health_url', 'floor')
return {health_url = m[1] or nil, floor = tonumber(m[2] or '1'), configured = configured_rate(),
  current = rate()}
