-- The proof of work a join of this show must bring now: {bits}, or {-404}/{-503}.
local _, refused = live_show()
if refused then return refused end
return {tonumber(redis.call('HGET', META, 'challenge_bits') or '0')}
