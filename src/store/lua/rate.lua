-- A show's own admission rate; every waiting fan's ETA changes with it. ARGV[7] = rate.
local now = now_ms()
redis.call('SET', RATE, ARGV[7])
local ver = redis.call('INCR', VER)
publish('rate', ver, head(), nil, 0, now)
return ver
