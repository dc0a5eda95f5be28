-- A sign of life from an admitted fan (its live stream): it keeps its admission for the full
-- TTL, past the arrival window. ARGV[7] = ticket. Returns {1} if the admission runs, else {0},
-- or {-404}/{-503}.
local epoch, refused = live_show()
if refused then return refused end
if not admitted(ARGV[7], epoch) then return {0} end
redis.call('ZADD', SEEN, now_ms(), ARGV[7])
return {1}
