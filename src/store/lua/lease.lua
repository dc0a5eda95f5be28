-- The admitter lease. KEYS[1] = lease, KEYS[2] = fencing counter; ARGV[1] = instance,
-- ARGV[2] = ttl ms. The holder renews; anyone takes a free lease with a new, larger token.
-- Returns the token while ARGV[1] holds the lease, else 0.
local holder = redis.call('GET', KEYS[1])
if holder then
  local id, token = string.match(holder, '^(.*)|(%d+)$')
  if id == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(token)
  end
  return 0
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
return token
