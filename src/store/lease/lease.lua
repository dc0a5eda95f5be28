-- The admitter lease. KEYS[1] = lease, KEYS[2] = fencing counter; ARGV[1] = instance,
-- ARGV[2] = ttl ms, ARGV[3] = floor. The holder renews; anyone takes a free lease with a new,
-- larger token. Every token handed out is above the floor: an admitter that met a show
-- fenced at `floor` (the counter fell behind, say its slot lost its keys) gets a token past
-- it at once, even while it holds the lease, so one refusal heals instead of starving.
-- Answers, as JSON, {token} while ARGV[1] holds the lease, else {} (another holds it).
local floor = tonumber(ARGV[3])
local function issue()
  local counter = tonumber(redis.call('GET', KEYS[2]) or '0')
  if counter < floor then redis.call('SET', KEYS[2], floor) end
  local token = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
  return cjson.encode({token = token})
end
local holder = redis.call('GET', KEYS[1])
if holder then
  local id, token = string.match(holder, '^(.*)|(%d+)$')
  if id ~= ARGV[1] then return cjson.encode({}) end
  if tonumber(token) > floor then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return cjson.encode({token = tonumber(token)})
  end
end
return issue()
