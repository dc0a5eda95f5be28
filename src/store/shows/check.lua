-- The watchdog: what is this show now? A.known_epoch = the epoch this instance knew ('0':
-- none), A.new_epoch = a new epoch for a lost show. A show whose meta vanished without a tombstone lost
-- its state (Redis restarted empty, or a failover lost it): it is marked lost under the new
-- epoch, so that every instance refuses it until an operator re-opens it, and the hubs are
-- told. Answers {} when there is no show, else {show = {epoch, open, lost}}.
local m = redis.call('HMGET', META, 'epoch', 'open', 'lost', 'deleted')
if m[4] then return {} end
if m[1] then
  return {show = {epoch = m[1], open = m[2] == '1', lost = m[3] == '1'}}
end
if A.known_epoch == '0' then return {} end
local now = now_ms()
create(A.new_epoch, now)
redis.call('HSET', META, 'lost', '1', 'lost_ms', now, 'lost_epoch', A.known_epoch)
publish('reset', A.new_epoch, 0, 0, nil, 0, now)
return {show = {epoch = A.new_epoch, open = false, lost = true}}
