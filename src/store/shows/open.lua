-- Opens the on-sale, creating the show if nobody did. A lost show starts again from nothing
-- under a new epoch (A.new_epoch), and the hubs are told so that every old position is void.
-- A scheduled show opens by itself, after its draw: the outcome `opens_by_itself` until
-- then. A paused, closed or ended show resumes.
-- Answers the outcome `opened`, with whether it was `created` or `recovered`, and its epoch.
local m = redis.call('HMGET', META, 'epoch', 'lost', 'deleted')
local now = now_ms()
local created, recovered = false, false
local epoch = m[1]
if not epoch or m[3] then
  epoch = A.new_epoch
  create(epoch, now)
  created = true
elseif m[2] == '1' then
  epoch = A.new_epoch
  create(epoch, now)
  recovered = true
  publish('reset', epoch, 0, 0, nil, 0, now)
end
local d = draw_phase()
if d and not d.p then return {outcome = 'opens_by_itself'} end
if not is_open() then
  redis.call('HSET', META, 'open', '1')
  redis.call('HDEL', META, 'phase', 'end_reason')
  audit({'kind', 'phase', 'at_ms', now, 'epoch', epoch, 'phase', 'open'})
  -- Every waiting fan's queue starts moving: a new pace (and no "closed" any more).
  publish('rate', epoch, redis.call('INCR', VER), head(), nil, 0, now)
end
return {outcome = 'opened', created = created, recovered = recovered, epoch = epoch}
