-- Creates the show if nobody did (ARGV[7] = a new epoch) and applies the operator's settings:
-- ARGV[8] = rate or '', ARGV[9] = cap on active buyers or ''. A new rate is published: every
-- waiting fan's ETA changes with it. Returns {created, epoch}.
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
if ARGV[8] ~= '' then
  redis.call('SET', RATE, ARGV[8])
  local ver = redis.call('INCR', VER)
  publish('rate', epoch, ver, head(), nil, 0, now)
end
return {created, tonumber(epoch)}
