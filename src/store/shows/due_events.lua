-- The schedule's changes that are due (docs/events.md), applied by the admitter whatever the
-- show's phase, fenced as a tick is (A.fence): the settings in force, and the phase an event
-- starts (open, paused, ended). A tick applies them too while the show is open; this is how a
-- show not open (pending, paused) hears of its schedule with no join or status read, and how
-- an event opens it. Answers {outcome = 'applied', open, next_at} (next_at: when the schedule
-- next changes anything, ms; absent: never), or `fenced` with the newest fence seen.
local epoch, refused = live_show()
if refused then return refused end
local token = tonumber(A.fence)
local fence = tonumber(redis.call('GET', FENCE) or '0')
if token < fence then return {outcome = 'fenced', fence = fence} end
if token > fence then redis.call('SET', FENCE, token) end
local now = now_ms()
if redis.call('HEXISTS', META, 'events') == 1 then
  if apply_events(now, epoch, token, true) then
    publish('rate', epoch, redis.call('INCR', VER), head(), nil, 0, now)
  end
end
return {outcome = 'applied', open = is_open(),
  next_at = tonumber(redis.call('HGET', META, 'event_at') or '')}
