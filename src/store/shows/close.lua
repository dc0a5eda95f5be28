-- Lifts the gate (the original's close, "no on-sale running: no gate"): no admissions, orders
-- need no admission, and fans still queued are told the waiting room stepped aside. Their
-- places are kept: `open` puts them back in line. Answers {closed = true}.
local m = redis.call('HMGET', META, 'epoch', 'deleted')
if not m[1] or m[2] then return {refused = 'no_such_show'} end
enter_phase('closed', m[1], nil)
return {closed = true}
