-- Leave: a waiting ticket leaves the queue (everyone behind moves up, and the hubs are told);
-- an admitted ticket gives its admission back. A.ticket: the ticket. Answers {live}: whether it
-- was live.
local epoch, refused = live_show()
if refused then return refused end
local now = now_ms()
local seq = redis.call('ZSCORE', Q, A.ticket)
-- A fan passed over while away leaves from where it is kept.
if not seq and redis.call('ZREM', PARKED, A.ticket) == 1 then
  redis.call('ZREM', BACK, A.ticket)
  redis.call('ZREM', AWAY, A.ticket)
  uncall(A.ticket)
  return {live = true}
end
if seq then
  seq = tonumber(seq)
  redis.call('ZREM', Q, A.ticket)
  redis.call('ZREM', AWAY, A.ticket)
  uncall(A.ticket)
  -- Kept by its place in the queue; a pre-queue's arrival until the draw places it.
  local key = order_key(draw_phase(), seq) or seq
  redis.call('ZADD', LEFT, key, key)
  local ver = redis.call('INCR', VER)
  publish('leave', epoch, ver, head(), key, 0, now)
  return {live = true}
end
if admitted(A.ticket, epoch) then
  ended(A.ticket, now)
  redis.call('DEL', ADMITTED .. A.ticket)
  redis.call('ZREM', ADMISSIONS, A.ticket)
  publish_ended(epoch, A.ticket, now)
  return {live = true}
end
return {live = false}
