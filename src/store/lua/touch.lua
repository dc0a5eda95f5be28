-- A sign of life from an admitted fan (its live stream): it keeps its admission for the full
-- TTL, past the arrival window. A.ticket: the ticket; A.window_ms: the default window.
-- Returns {1} noted, {2} not needed (no cap or no window: nothing is ever released untaken),
-- {0} the admission is over, or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
if not admitted(A.ticket, epoch) then return {0} end
local window = tonumber(redis.call('HGET', META, 'window') or A.window_ms)
if cap() == 0 or window == 0 then return {2} end
redis.call('ZADD', SEEN, now_ms(), A.ticket)
return {1}
