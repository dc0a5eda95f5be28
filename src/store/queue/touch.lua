-- A sign of life from an admitted fan (its live stream): it keeps its admission for the full
-- TTL, past the arrival window. A.ticket: the ticket; A.window_ms: the default window.
-- Answers the outcome `kept`, `not_needed` (no cap or no window: nothing is ever released
-- untaken) or `over` (the admission is).
local epoch, refused = live_show()
if refused then return refused end
if not admitted(A.ticket, epoch) then return {outcome = 'over'} end
local window = tonumber(redis.call('HGET', META, 'window') or A.window_ms)
if cap() == 0 or window == 0 then return {outcome = 'not_needed'} end
redis.call('ZADD', SEEN, now_ms(), A.ticket)
return {outcome = 'kept'}
