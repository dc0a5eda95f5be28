-- Creates the show if nobody did (ARGV[7] = a new epoch) and applies the operator's settings:
-- ARGV[8] = rate or '', ARGV[9] = cap on active buyers or '', ARGV[10] = arrival window in ms
-- or '', ARGV[11] = checkout health URL ('' keeps it, '-' clears it), ARGV[12] = the lowest
-- rate the pace may fall to while it follows the checkout, or ''. A new rate is published:
-- every waiting fan's ETA changes with it. Returns {created, epoch}.
local m = redis.call('HMGET', META, 'epoch', 'deleted')
local created = 0
local epoch = m[1]
local now = now_ms()
if not epoch or m[2] then
  epoch = ARGV[7]
  create(epoch, now)
  created = 1
end
if ARGV[9] ~= '' then redis.call('SET', CAP, ARGV[9]) end
if ARGV[10] ~= '' then redis.call('HSET', META, 'window', ARGV[10]) end
if ARGV[11] == '-' then
  redis.call('HDEL', META, 'health_url', 'pace')
elseif ARGV[11] ~= '' then
  redis.call('HSET', META, 'health_url', ARGV[11])
end
if ARGV[12] ~= '' then redis.call('HSET', META, 'floor', ARGV[12]) end
if ARGV[8] ~= '' then
  redis.call('SET', RATE, ARGV[8])
  -- Without a cap the pace is the rate, from this tick on; with one, what was measured,
  -- never above the new rate.
  if cap() == 0 then redis.call('HSET', FLOW, 'mean', ARGV[8], 'var', 0) end
  local ver = redis.call('INCR', VER)
  publish('rate', epoch, ver, head(), nil, 0, now)
end
return {created, tonumber(epoch)}
