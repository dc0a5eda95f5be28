-- Per-client join limit, GCRA: `rate` a second with bursts of `burst`. KEYS[1] holds the
-- client's theoretical arrival time (ms). ARGV[1] = rate, ARGV[2] = burst.
-- Answers, as JSON, {wait_ms}: 0 when allowed, else the milliseconds to wait.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = 1000 / tonumber(ARGV[1])
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or now), now)
local new_tat = tat + interval
local allowed_at = new_tat - interval * tonumber(ARGV[2])
if allowed_at > now then
  return cjson.encode({wait_ms = math.ceil(allowed_at - now)})
end
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil(new_tat - now))
return cjson.encode({wait_ms = 0})
