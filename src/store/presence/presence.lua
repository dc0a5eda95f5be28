-- Presence: one instance's news of one show's fans, once a second (however many fans it
-- holds): A.instance; A.ttl_ms, how long its report holds by the store's clock (it renews it
-- every second, so an instance that dies drops out by itself); A.came, the tickets it now holds a first
-- live stream of; A.went, those whose last stream here ended; A.polled, those polled here
-- since its last report. A fan whose last stream anywhere ended is last seen now; a poll is
-- a sign of life; a parked fan seen again is back (for the next tick to let in first).
-- Answers {back}: how many parked fans came back.
local _, refused = live_show()
if refused then return refused end
local now = now_ms()
local until_ms = now + tonumber(A.ttl_ms)
redis.call('HSET', INSTANCES, A.instance, until_ms)
local mine = ON .. A.instance
local back = 0
local function returns(t)
  if redis.call('ZSCORE', PARKED, t) then
    came_back(t)
    back = back + 1
  end
end
-- Lua's unpack takes some thousands of values at most, and an instance's first report after
-- a burst names every fan it took: lists go to Redis a thousand at a time.
local function in_thousands(command, key, list)
  for i = 1, #list, 1000 do
    redis.call(command, key, unpack(list, i, math.min(i + 999, #list)))
  end
end
if A.came and #A.came > 0 then
  in_thousands('SADD', mine, A.came)
  in_thousands('ZREM', AWAY, A.came)
  for _, t in ipairs(A.came) do returns(t) end
end
if A.went and #A.went > 0 then
  in_thousands('SREM', mine, A.went)
  local live = live_instances(now)
  for _, t in ipairs(A.went) do
    if not streamed_elsewhere(t, A.instance, live) then last_seen(t, now) end
  end
end
for _, t in ipairs(A.polled or {}) do
  -- A ticket absent from AWAY streams somewhere (or holds no place): present already.
  if redis.call('ZSCORE', AWAY, t) then
    redis.call('ZADD', AWAY, now, t)
    returns(t)
  end
end
if A.went and #A.went > 0 and redis.call('SCARD', mine) == 0 then
  redis.call('HDEL', INSTANCES, A.instance)
else
  -- Kept an hour past the report: a tick reaps it sooner, if the instance dies.
  redis.call('PEXPIRE', mine, tonumber(A.ttl_ms) + 3600000)
end
return {back = back}
