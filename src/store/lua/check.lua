-- The watchdog: what is this show now? ARGV[7] = the epoch this instance knew (0: none),
-- ARGV[8] = a new epoch for a lost show. A show whose meta vanished without a tombstone lost
-- its state (Redis restarted empty, or a failover lost it): it is marked lost under the new
-- epoch, so that every instance refuses it until an operator re-opens it, and the hubs are
-- told. Returns {0} no show, else {1, epoch, open, lost}.
local m = redis.call('HMGET', META, 'epoch', 'open', 'lost', 'deleted')
if m[4] then return {0} end
if m[1] then
  return {1, tonumber(m[1]), m[2] == '1' and 1 or 0, m[3] == '1' and 1 or 0}
end
if ARGV[7] == '0' then return {0} end
local now = now_ms()
create(ARGV[8], now)
redis.call('HSET', META, 'lost', '1', 'lost_ms', now, 'lost_epoch', ARGV[7])
publish('reset', ARGV[8], 0, 0, nil, 0, now)
return {1, tonumber(ARGV[8]), 0, 1}
