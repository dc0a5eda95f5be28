-- A sign of life from an admitted fan (its live stream): it keeps its admission for the full
-- TTL, past the arrival window. A.ticket: the ticket. Returns {1} if the admission runs, else {0},
-- or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
if not admitted(A.ticket, epoch) then return {0} end
redis.call('ZADD', SEEN, now_ms(), A.ticket)
return {1}
