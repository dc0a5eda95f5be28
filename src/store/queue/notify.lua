-- A waiting fan asks to be called when its turn is near: A.ticket, A.channel_json (its Web
-- Push subscription, or the operator's webhook). One channel a ticket, the newest kept; the
-- call `soon` is due once its place is within notifyAheadSeconds of the head (admit.lua).
-- Answers the outcome `asked`, or `not_waiting` (not queued: nothing to call it for).
local epoch, refused = live_show()
if refused then return refused end
local seq = redis.call('ZSCORE', Q, A.ticket)
local parked = not seq and redis.call('ZSCORE', PARKED, A.ticket)
if not seq and not parked then return {outcome = 'not_waiting'} end
redis.call('HSET', CALLS, A.ticket, A.channel_json)
-- Ordered by place: the arrival, or its drawn place once drawn; a parked fan's turn has come.
local key = parked and 0 or (order_key(draw_phase(), tonumber(seq)) or tonumber(seq))
redis.call('ZADD', CALLQ, key, A.ticket)
return {outcome = 'asked'}
